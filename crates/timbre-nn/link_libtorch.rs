// Shared by the build scripts of every crate whose binaries link libtorch (each `include!`s it
// and depends on torch-sys directly, which is what gives it DEP_TCH_LIBTORCH_LIB).
// torch-sys's rpath does not reach final binaries: point them at the libtorch they were built
// against (a package replaces it with its own, scripts/package.sh). Only libtorch's CPU
// libraries stay linked (the linker's --as-needed drops libtorch_cuda, which nothing names):
// timbre-torch-ext's `cuda` module loads the CUDA backend at start where there is one.
fn link_libtorch() {
    if let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath={lib}");
    }
}
