// Shared by the build scripts of every crate whose binaries link libtorch (each `include!`s it
// and depends on torch-sys directly, which is what gives it DEP_TCH_LIBTORCH_LIB).
// torch-sys's rpath does not reach final binaries: point them at the libtorch they were built
// against, and keep libtorch_cuda linked even though nothing names it (tch#980).
fn link_libtorch() {
    if let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath={lib}");
    }
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
    println!("cargo:rustc-link-arg=-ltorch");
}
