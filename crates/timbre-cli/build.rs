//! Build script: `link_libtorch` (from `timbre-nn/link_libtorch.rs`) points the `timbre` binary,
//! its tests and its bench at the libtorch they were built against, and keeps libtorch_cuda
//! linked though nothing names it.

include!("../timbre-nn/link_libtorch.rs");

fn main() {
    link_libtorch();
}
