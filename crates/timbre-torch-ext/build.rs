//! Compiles src/shim.cpp against the headers of the libtorch torch-sys links (found beside its
//! `lib` folder, as in both a PyPI torch and a libtorch archive) with torch-sys's own flags, as
//! a static library that needs libtorch's CPU libraries only. The CUDA-graph half
//! (src/cuda_graph.cpp) is linked against libtorch_cuda as a shared library of its own, which
//! src/cuda.rs embeds and loads after libtorch_cuda at start (`cfg(timbre_cuda_graph)`, its path
//! in `TIMBRE_CUDA_GRAPH_LIB`). It needs CUDA's runtime headers (ATen/cuda/CUDAGraph.h includes
//! them) and libtorch_cuda; where either is missing it is not built and `CudaGraph` says so at
//! run time, so a CPU-only libtorch still builds. `TIMBRE_TORCH_VERSION` is the libtorch's
//! version, which names the CUDA runtime folder it can use.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    let lib = PathBuf::from(
        env::var("DEP_TCH_LIBTORCH_LIB").expect("torch-sys gives DEP_TCH_LIBTORCH_LIB"),
    );
    let root = lib.parent().expect("libtorch's lib folder has a parent");
    let include = root.join("include");
    let compiler = |file: &str| {
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
            .file(file);
        build
    };
    compiler("src/shim.cpp")
        .file("src/distributed.cpp")
        .include("third_party/gloo")
        .define("USE_C10D_GLOO", None)
        .compile("timbre_torch_ext");
    println!("cargo::rustc-check-cfg=cfg(timbre_cuda_graph)");
    println!("cargo::rustc-check-cfg=cfg(timbre_nccl)");
    let cuda_headers = cuda_includes(root);
    let has_libtorch_cuda = lib.join("libtorch_cuda.so").exists();
    if !cuda_headers.is_empty() && has_libtorch_cuda {
        let mut build = compiler("src/cuda_graph.cpp");
        build.includes(&cuda_headers);
        let nccl = nccl_include(root);
        if let Some(nccl) = &nccl {
            build
                .file("src/cuda_nccl.cpp")
                .include(nccl)
                .define("USE_C10D_NCCL", None);
            println!("cargo:rustc-cfg=timbre_nccl");
        } else {
            println!(
                "cargo:warning=timbre-torch-ext: built without NCCL groups (nccl.h or CUDA's nv/target not found)"
            );
        }
        let objects = build.compile_intermediates();
        let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let shared = out.join("libtimbre_cuda_graph.so");
        // No run path: it is loaded after libtorch_cuda, whose libraries it finds loaded.
        let status = build
            .get_compiler()
            .to_command()
            .arg("-shared")
            .arg("-Wl,-soname,libtimbre_cuda_graph.so")
            .arg("-o")
            .arg(&shared)
            .args(&objects)
            .arg(format!("-L{}", lib.display()))
            .args(["-ltorch_cuda", "-lc10_cuda", "-ltorch_cpu", "-lc10"])
            .status()
            .expect("running the C++ compiler to link libtimbre_cuda_graph.so");
        assert!(status.success(), "linking libtimbre_cuda_graph.so failed");
        println!("cargo:rustc-cfg=timbre_cuda_graph");
        println!("cargo:rustc-env=TIMBRE_CUDA_GRAPH_LIB={}", shared.display());
    } else {
        println!(
            "cargo:warning=timbre-torch-ext: built without CUDA graphs (CUDA headers: {}, libtorch_cuda: {has_libtorch_cuda})",
            if cuda_headers.is_empty() {
                "not found".to_string()
            } else {
                format!("{cuda_headers:?}")
            }
        );
    }
    println!(
        "cargo:rustc-env=TIMBRE_TORCH_VERSION={}",
        torch_version(root)
    );
    // This crate's own test binaries find libtorch as timbre-nn's do (link_libtorch.rs there).
    println!("cargo:rustc-link-arg=-Wl,-rpath={}", lib.display());
    println!("cargo:rerun-if-changed=src/shim.cpp");
    println!("cargo:rerun-if-changed=src/shim_error.h");
    println!("cargo:rerun-if-changed=src/cuda_graph.cpp");
    println!("cargo:rerun-if-changed=src/distributed.cpp");
    println!("cargo:rerun-if-changed=src/cuda_nccl.cpp");
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

/// NCCL's header folder beside a PyPI torch (the nvidia-nccl wheel), when CUDA's C++ core
/// headers that nccl.h reaches (`nv/target`, which the nvidia-cuda-cccl wheel puts in CUDA 13's
/// include folder) are there too.
fn nccl_include(torch_root: &Path) -> Option<PathBuf> {
    let site = torch_root.parent()?;
    let nccl = site.join("nvidia/nccl/include");
    (nccl.join("nccl.h").exists() && site.join("nvidia/cu13/include/nv/target").exists())
        .then_some(nccl)
}

/// The libtorch's version: PyPI torch's `version.py` (`__version__ = '2.11.0+cu130'`), else a
/// libtorch archive's `build-version`.
fn torch_version(torch_root: &Path) -> String {
    let from_python = std::fs::read_to_string(torch_root.join("version.py"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("__version__ = "))
                .map(|v| v.trim().trim_matches(['\'', '"']).to_owned())
        });
    from_python
        .or_else(|| {
            std::fs::read_to_string(torch_root.join("build-version"))
                .ok()
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}
