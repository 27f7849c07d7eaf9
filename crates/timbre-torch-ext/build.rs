//! Compiles src/shim.cpp against the headers of the libtorch torch-sys links (found beside its
//! `lib` folder, as in both a PyPI torch and a libtorch archive) with torch-sys's own flags.
//! The CUDA-graph half needs CUDA's runtime headers (ATen/cuda/CUDAGraph.h includes them) and
//! libtorch_cuda; where either is missing the shim is built without it and `CudaGraph` says so
//! at run time, so a CPU-only libtorch still builds.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    let lib = PathBuf::from(
        env::var("DEP_TCH_LIBTORCH_LIB").expect("torch-sys gives DEP_TCH_LIBTORCH_LIB"),
    );
    let root = lib.parent().expect("libtorch's lib folder has a parent");
    let include = root.join("include");
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        // libtorch 2.x on Linux uses the C++11 ABI; torch-sys reads the same override.
        .flag(format!(
            "-D_GLIBCXX_USE_CXX11_ABI={}",
            env::var("LIBTORCH_CXX11_ABI").unwrap_or_else(|_| "1".to_owned())
        ))
        .flag("-DGLOG_USE_GLOG_EXPORT")
        .file("src/shim.cpp");
    let cuda_headers = cuda_includes(root);
    let has_libtorch_cuda = lib.join("libtorch_cuda.so").exists();
    match (cuda_headers.is_empty(), has_libtorch_cuda) {
        (false, true) => {
            build
                .includes(&cuda_headers)
                .define("TIMBRE_TORCH_CUDA", None);
            println!("cargo:rustc-link-search=native={}", lib.display());
            println!("cargo:rustc-link-lib=torch_cuda");
            println!("cargo:rustc-link-lib=c10_cuda");
        }
        _ => println!(
            "cargo:warning=timbre-torch-ext: built without CUDA graphs (CUDA headers: {}, libtorch_cuda: {has_libtorch_cuda})",
            if cuda_headers.is_empty() {
                "not found".to_string()
            } else {
                format!("{cuda_headers:?}")
            }
        ),
    }
    build.compile("timbre_torch_ext");
    // This crate's own test binaries find libtorch as timbre-nn's do (link_libtorch.rs there).
    println!("cargo:rustc-link-arg=-Wl,-rpath={}", lib.display());
    println!("cargo:rerun-if-changed=src/shim.cpp");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
}

/// CUDA's runtime headers: `CUDA_HOME`, the nvidia-* wheels beside a PyPI torch
/// (`site-packages/nvidia/cu13/include` for CUDA 13, `nvidia/cuda_runtime/include` for 12), or
/// the system toolkit. The CUDA 13 wheel lacks the host-compiler headers (`crt/`) that
/// cuda_runtime.h includes; triton (a dependency of Linux torch) ships a full set, taken for
/// those alone, after the runtime's own folder. Empty when no complete set is found.
fn cuda_includes(torch_root: &Path) -> Vec<PathBuf> {
    let site = torch_root
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(home) = env::var("CUDA_HOME") {
        candidates.push(Path::new(&home).join("include"));
    }
    candidates.push(site.join("nvidia/cu13/include"));
    candidates.push(site.join("nvidia/cuda_runtime/include"));
    candidates.push(site.join("triton/backends/nvidia/include"));
    candidates.push("/usr/local/cuda/include".into());
    let with = |file: &str| {
        candidates
            .iter()
            .find(|dir| dir.join(file).exists())
            .cloned()
    };
    let (Some(runtime), Some(host_config)) =
        (with("cuda_runtime_api.h"), with("crt/host_config.h"))
    else {
        return Vec::new();
    };
    if runtime == host_config {
        vec![runtime]
    } else {
        vec![runtime, host_config]
    }
}
