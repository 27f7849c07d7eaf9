//! libtorch's CUDA backend, loaded when the process starts rather than linked: the binaries
//! link libtorch's CPU libraries only, so a package that ships just those starts on any machine,
//! and CUDA is there wherever a CUDA runtime is found. libtorch registers its CUDA backend when
//! libtorch_cuda is loaded, and a process that asked for CUDA before that keeps it off for good
//! (ATen's `getCUDAHooks` is called once), so the loading runs from `.init_array`, before `main`
//! and before any test's first torch call, in every binary that links this crate.
//!
//! libtorch_cuda is looked for, first found wins: in `TIMBRE_CUDA_RUNTIME` (a folder holding
//! `torch/lib/libtorch_cuda.so`, a site-packages layout), in the runtime folder
//! `timbre runtime install cuda` fills ([`runtime_folder`]), then beside the libtorch_cpu this
//! process loaded (a source build against the venv's PyPI torch). The library's own run path finds
//! NVIDIA's libraries in `nvidia/*/lib` of the same layout; libtorch_cpu and libc10 are the
//! ones already loaded. Then the shim's CUDA-graph half (`cuda_graph.cpp`, embedded in this
//! crate) is loaded from memory.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Overrides where libtorch_cuda is looked for first: a folder with `torch/lib/libtorch_cuda.so`.
pub const RUNTIME_ENV: &str = "TIMBRE_CUDA_RUNTIME";
/// Overrides the folder that holds the installed runtimes (default: the XDG data dir's
/// `timbre-studio/runtime`).
pub const RUNTIME_ROOT_ENV: &str = "TIMBRE_RUNTIME_DIR";

/// The libtorch version this build links (PyPI's, e.g. `2.11.0+cu130`): a CUDA runtime must be
/// exactly this version's.
pub const TORCH_VERSION: &str = env!("TIMBRE_TORCH_VERSION");

/// What was loaded at start.
#[derive(Debug)]
pub struct Backend {
    /// The libtorch_cuda.so loaded, when one was.
    pub library: Option<PathBuf>,
    /// Why none was, or why the one found did not load (the loader's message).
    pub problem: Option<String>,
    graphs: Option<GraphFns>,
    nccl: Option<NcclNew>,
}

impl Backend {
    /// Whether the CUDA-graph half of the shim is loaded (it still needs a CUDA device).
    pub fn has_graphs(&self) -> bool {
        self.graphs.is_some()
    }
}

type ErrorText = *mut c_char;

type GraphNew = unsafe extern "C" fn() -> *mut c_void;
type GraphFree = unsafe extern "C" fn(*mut c_void);
type GraphCapture = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    c_int,
    extern "C" fn(*mut c_void) -> c_int,
    *mut c_void,
) -> ErrorText;
type GraphReplay = unsafe extern "C" fn(*mut c_void) -> ErrorText;
/// `timbre_cuda_nccl_new(store, rank, world, timeout_ms, device, out)` of cuda_nccl.cpp.
pub(crate) type NcclNew =
    unsafe extern "C" fn(*mut c_void, c_int, c_int, i64, c_int, *mut *mut c_void) -> ErrorText;

#[derive(Debug, Clone, Copy)]
pub(crate) struct GraphFns {
    pub new: GraphNew,
    pub free: GraphFree,
    pub capture: GraphCapture,
    pub replay: GraphReplay,
}

static BACKEND: OnceLock<Backend> = OnceLock::new();

#[used]
#[unsafe(link_section = ".init_array")]
static LOAD_AT_START: extern "C" fn() = load_at_start;

extern "C" fn load_at_start() {
    backend();
}

/// The CUDA backend as loaded at start.
pub fn backend() -> &'static Backend {
    BACKEND.get_or_init(load)
}

pub(crate) fn graph_fns() -> Option<GraphFns> {
    backend().graphs
}

/// The NCCL group's constructor, where the CUDA half was built with NCCL and loaded.
pub(crate) fn nccl_new() -> Option<NcclNew> {
    backend().nccl
}

/// Where installed runtimes live: `TIMBRE_RUNTIME_DIR`, else `<XDG data dir>/timbre-studio/runtime`.
pub fn runtime_root() -> Option<PathBuf> {
    std::env::var_os(RUNTIME_ROOT_ENV)
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|dir| dir.join("timbre-studio").join("runtime")))
}

/// The folder the CUDA runtime for this build's libtorch is installed in.
pub fn runtime_folder() -> Option<PathBuf> {
    runtime_root().map(|root| root.join(format!("cuda-{TORCH_VERSION}")))
}

fn candidates() -> Vec<PathBuf> {
    let mut folders = Vec::new();
    if let Some(dir) = std::env::var_os(RUNTIME_ENV).filter(|dir| !dir.is_empty()) {
        folders.push(PathBuf::from(dir).join("torch/lib"));
    }
    if let Some(dir) = runtime_folder() {
        folders.push(dir.join("torch/lib"));
    }
    if let Some(dir) = loaded_libtorch_cpu().and_then(|lib| lib.parent().map(Path::to_path_buf)) {
        folders.push(dir);
    }
    folders
        .into_iter()
        .map(|dir| dir.join("libtorch_cuda.so"))
        .collect()
}

fn load() -> Backend {
    let Some(library) = candidates().into_iter().find(|path| path.is_file()) else {
        return Backend {
            library: None,
            problem: Some(format!(
                "no CUDA runtime: libtorch_cuda.so is neither in {} nor beside libtorch_cpu",
                runtime_folder()
                    .map_or_else(|| "a runtime folder".into(), |f| f.display().to_string())
            )),
            graphs: None,
            nccl: None,
        };
    };
    if let Err(problem) = open(&library, libc::RTLD_NOW | libc::RTLD_GLOBAL) {
        return Backend {
            library: None,
            problem: Some(format!("{}: {problem}", library.display())),
            graphs: None,
            nccl: None,
        };
    }
    let ((graphs, nccl), problem) = match load_cuda_half() {
        Ok(half) => (half, None),
        Err(problem) => ((None, None), Some(format!("CUDA graphs: {problem}"))),
    };
    Backend {
        library: Some(library),
        problem,
        graphs,
        nccl,
    }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by the loader.
    let text = unsafe { libc::dlerror() };
    if text.is_null() {
        "unknown loader error".into()
    } else {
        // SAFETY: non-null, NUL-terminated, read before any other dl* call on this thread.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

fn open(path: &Path, flags: c_int) -> Result<*mut c_void, String> {
    let name = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; the handle is kept for the life of the process.
    let handle = unsafe { libc::dlopen(name.as_ptr(), flags) };
    if handle.is_null() {
        Err(dl_error())
    } else {
        Ok(handle)
    }
}

/// The CUDA half's graph functions and, where it was built with NCCL, the NCCL group's
/// constructor.
#[cfg(timbre_cuda_graph)]
fn load_cuda_half() -> Result<(Option<GraphFns>, Option<NcclNew>), String> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd};
    static LIBRARY: &[u8] = include_bytes!(env!("TIMBRE_CUDA_GRAPH_LIB"));
    // SAFETY: a name and flags; the descriptor is owned by the File below.
    let fd = unsafe { libc::memfd_create(c"timbre_cuda_graph".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(LIBRARY)
        .map_err(|e| format!("writing it to memory: {e}"))?;
    let handle = open(
        Path::new(&format!("/proc/self/fd/{}", file.as_raw_fd())),
        libc::RTLD_NOW | libc::RTLD_LOCAL,
    )?;
    let symbol = |name: &CStr| {
        // SAFETY: a live handle and a NUL-terminated name.
        let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if address.is_null() {
            Err(format!(
                "{} missing: {}",
                name.to_string_lossy(),
                dl_error()
            ))
        } else {
            Ok(address)
        }
    };
    #[cfg(timbre_nccl)]
    // SAFETY: the extern "C" function of cuda_nccl.cpp with this signature.
    let nccl = Some(unsafe {
        std::mem::transmute::<*mut c_void, NcclNew>(symbol(c"timbre_cuda_nccl_new")?)
    });
    #[cfg(not(timbre_nccl))]
    let nccl = None;
    // SAFETY: each symbol is the extern "C" function of cuda_graph.cpp with this signature.
    let graphs = unsafe {
        GraphFns {
            new: std::mem::transmute::<*mut c_void, GraphNew>(symbol(c"timbre_cuda_graph_new")?),
            free: std::mem::transmute::<*mut c_void, GraphFree>(symbol(c"timbre_cuda_graph_free")?),
            capture: std::mem::transmute::<*mut c_void, GraphCapture>(symbol(
                c"timbre_cuda_graph_capture",
            )?),
            replay: std::mem::transmute::<*mut c_void, GraphReplay>(symbol(
                c"timbre_cuda_graph_replay",
            )?),
        }
    };
    Ok((Some(graphs), nccl))
}

#[cfg(not(timbre_cuda_graph))]
fn load_cuda_half() -> Result<(Option<GraphFns>, Option<NcclNew>), String> {
    Ok((None, None))
}

/// The path of the libtorch_cpu.so this process loaded, from the loader's list of objects.
fn loaded_libtorch_cpu() -> Option<PathBuf> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        found: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid info whose name is NUL-terminated or NULL, and
        // `found` is the Option this function was given.
        let (name, found) = unsafe { ((*info).dlpi_name, &mut *(found as *mut Option<PathBuf>)) };
        if name.is_null() {
            return 0;
        }
        // SAFETY: non-null and NUL-terminated.
        let path = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        if Path::new(path.as_ref()).file_name() == Some("libtorch_cpu.so".as_ref()) {
            *found = Some(PathBuf::from(path.as_ref()));
            return 1;
        }
        0
    }
    let mut found: Option<PathBuf> = None;
    // SAFETY: `visit` only reads the infos and writes `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut _ as *mut c_void) };
    found
}
