//! Build script: `link_libtorch` (from `timbre-nn/link_libtorch.rs`) points the `timbre` binary,
//! its tests and its bench at the libtorch they were built against; `git_commit` gives
//! `--version` its commit.

include!("../timbre-nn/link_libtorch.rs");
include!("git_commit.rs");

fn main() {
    link_libtorch();
    git_commit();
}
