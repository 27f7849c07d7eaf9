include!("../crates/timbre-nn/link_libtorch.rs");

fn main() {
    link_libtorch();
}
