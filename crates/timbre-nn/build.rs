//! Build script: `link_libtorch` (from `link_libtorch.rs`, which the other crates' build scripts
//! include too) points the crate's tests and benches at the libtorch they were built against.

include!("link_libtorch.rs");

fn main() {
    link_libtorch();
}
