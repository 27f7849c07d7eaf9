//! Build script: `link_libtorch` (from `timbre-nn/link_libtorch.rs`) points the crate's test
//! binaries at the libtorch they were built against.

include!("../timbre-nn/link_libtorch.rs");

fn main() {
    link_libtorch();
}
