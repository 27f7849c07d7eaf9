//! Build script: creates an empty `ui/dist` if the UI is not built yet, links libtorch with an
//! rpath to it, sets the commit the About box shows, and runs `tauri_build`.
include!("../crates/timbre-nn/link_libtorch.rs");
include!("../crates/timbre-cli/git_commit.rs");

fn main() {
    // The frontend bundle is embedded at compile time; an empty folder lets `cargo check` and
    // `cargo test` work before the UI has been built.
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist");
    std::fs::create_dir_all(&dist).expect("creating ui/dist");
    link_libtorch();
    git_commit();
    tauri_build::build()
}
