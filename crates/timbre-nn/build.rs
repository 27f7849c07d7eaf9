//! Build script: `link_libtorch` (from `link_libtorch.rs`, which the other crates' build scripts
//! include too) points the crate's tests and benches at the libtorch they were built against, and
//! keeps libtorch_cuda linked though nothing names it.

include!("link_libtorch.rs");

fn main() {
    link_libtorch();
}
