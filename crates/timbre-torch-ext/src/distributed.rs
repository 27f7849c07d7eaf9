//! torch.distributed's c10d through the shim (src/distributed.cpp): the TCPStore rendezvous of
//! `init_process_group("env://")`, with the ranks read from torchrun's or SLURM's environment,
//! and a process group on Gloo (CPU tensors, or CUDA tensors through the host) or NCCL (CUDA,
//! from the CUDA half, where it was built with NCCL) with the collectives data-parallel training
//! needs. Every collective waits at most the rendezvous's timeout, so a rank that died or hangs
//! ends the others' wait with an error instead of a hang.

use std::ffi::{CString, c_char, c_int, c_void};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

use crate::{RawTensor, checked};

unsafe extern "C" {
    fn timbre_ext_store_new(
        host: *const c_char,
        port: c_int,
        rank: c_int,
        world: c_int,
        timeout_ms: i64,
        is_server: c_int,
        out: *mut *mut c_void,
    ) -> *mut c_char;
    fn timbre_ext_store_free(store: *mut c_void);
    fn timbre_ext_gloo_new(
        store: *mut c_void,
        rank: c_int,
        world: c_int,
        timeout_ms: i64,
        interface: *const c_char,
        loopback: c_int,
        out: *mut *mut c_void,
    ) -> *mut c_char;
    fn timbre_ext_group_free(group: *mut c_void);
    fn timbre_ext_group_allreduce(
        group: *mut c_void,
        tensor: RawTensor,
        op: c_int,
        timeout_ms: i64,
    ) -> *mut c_char;
    fn timbre_ext_group_broadcast(
        group: *mut c_void,
        tensor: RawTensor,
        root: c_int,
        timeout_ms: i64,
    ) -> *mut c_char;
}

/// How long a rendezvous or a collective waits for the other ranks unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Where and as whom a process joins its group: torchrun's variables (`MASTER_ADDR`,
/// `MASTER_PORT`, `WORLD_SIZE`, `RANK`, `LOCAL_RANK`), or SLURM's for the ranks (`SLURM_PROCID`,
/// `SLURM_NTASKS`, `SLURM_LOCALID`) beside the first two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendezvous {
    /// The host that serves the store (rank 0's machine).
    pub host: String,
    /// The store's TCP port.
    pub port: u16,
    /// This process's rank, 0 to `world - 1`; rank 0 writes what the run keeps.
    pub rank: usize,
    /// The number of ranks.
    pub world: usize,
    /// The rank among the processes of this machine (which device it takes).
    pub local_rank: usize,
    /// torchrun's agent serves the store (`TORCHELASTIC_USE_AGENT_STORE=True`), so rank 0
    /// connects to it as the others do.
    pub agent_store: bool,
    /// How long joining and each collective wait for the other ranks.
    pub timeout: Duration,
    /// The network interface Gloo binds (`GLOO_SOCKET_IFNAME`), else the loopback for a
    /// rendezvous on this machine, else the address of this machine's hostname.
    pub interface: Option<String>,
}

impl Rendezvous {
    /// Rank `rank` of `world` processes on this machine, the store on 127.0.0.1:`port`.
    pub fn on_this_machine(port: u16, rank: usize, world: usize, timeout: Duration) -> Self {
        Self {
            host: "127.0.0.1".into(),
            port,
            rank,
            world,
            local_rank: rank,
            agent_store: false,
            timeout,
            interface: None,
        }
    }

    /// The rendezvous the environment describes.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(env_var)
    }

    /// The rendezvous that `var` (an environment lookup) describes.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let number = |names: &[&str]| whole_number(&var, names);
        let host = var("MASTER_ADDR").context(
            "MASTER_ADDR is not set: a worker joins the rendezvous that MASTER_ADDR and MASTER_PORT name (torchrun and SLURM scripts set them)",
        )?;
        let port = number(&["MASTER_PORT"])?.context("MASTER_PORT is not set")?;
        ensure!(
            (1..=65535).contains(&port),
            "MASTER_PORT={port} is not a TCP port"
        );
        let world = number(&["WORLD_SIZE", "SLURM_NTASKS"])?
            .context("WORLD_SIZE (or SLURM_NTASKS) is not set")?;
        let rank =
            number(&["RANK", "SLURM_PROCID"])?.context("RANK (or SLURM_PROCID) is not set")?;
        ensure!(world >= 1, "WORLD_SIZE is 0: a group has at least one rank");
        ensure!(rank < world, "RANK={rank} is not below WORLD_SIZE={world}");
        let local_rank = number(&["LOCAL_RANK", "SLURM_LOCALID"])?.unwrap_or(0);
        let timeout = timeout_of(&var)?;
        Ok(Self {
            host,
            port: port as u16,
            rank,
            world,
            local_rank,
            agent_store: var("TORCHELASTIC_USE_AGENT_STORE").as_deref() == Some("True"),
            timeout,
            interface: var("GLOO_SOCKET_IFNAME"),
        })
    }

    /// The variables [`Rendezvous::from_env`] reads, for a worker process started for `rank`.
    pub fn env_vars(&self) -> Vec<(&'static str, String)> {
        let mut vars = vec![
            ("MASTER_ADDR", self.host.clone()),
            ("MASTER_PORT", self.port.to_string()),
            ("WORLD_SIZE", self.world.to_string()),
            ("RANK", self.rank.to_string()),
            ("LOCAL_RANK", self.local_rank.to_string()),
            (
                "TIMBRE_COLLECTIVE_TIMEOUT_SECS",
                self.timeout.as_secs().max(1).to_string(),
            ),
        ];
        if let Some(interface) = &self.interface {
            vars.push(("GLOO_SOCKET_IFNAME", interface.clone()));
        }
        vars
    }

    fn is_local(&self) -> bool {
        matches!(self.host.as_str(), "127.0.0.1" | "localhost" | "::1")
    }
}

/// How long collectives wait as the environment says: `TIMBRE_COLLECTIVE_TIMEOUT_SECS`, else
/// [`DEFAULT_TIMEOUT`].
pub fn collective_timeout() -> Result<Duration> {
    timeout_of(&env_var)
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn timeout_of(var: &impl Fn(&str) -> Option<String>) -> Result<Duration> {
    let secs = whole_number(var, &["TIMBRE_COLLECTIVE_TIMEOUT_SECS"])?;
    Ok(secs.map_or(DEFAULT_TIMEOUT, |secs| Duration::from_secs(secs as u64)))
}

/// The whole number the first of `names` that `var` knows holds; an error naming it when it
/// holds something else.
fn whole_number(var: &impl Fn(&str) -> Option<String>, names: &[&str]) -> Result<Option<usize>> {
    let Some((name, text)) = names.iter().find_map(|n| var(n).map(|v| (*n, v))) else {
        return Ok(None);
    };
    text.trim()
        .parse()
        .map(Some)
        .with_context(|| format!("{name}={text:?} is not a whole number"))
}

/// The collective library a group runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBackend {
    /// Gloo: CPU tensors, and CUDA tensors through the host.
    Gloo,
    /// NCCL on this CUDA device.
    Nccl(usize),
}

impl GroupBackend {
    /// NCCL for a CUDA device, Gloo for the CPU (torch's default choice).
    pub fn for_device(device: Device) -> Self {
        match device {
            Device::Cuda(index) => Self::Nccl(index),
            _ => Self::Gloo,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Gloo => "gloo",
            Self::Nccl(_) => "nccl",
        }
    }
}

/// One rank's membership of a process group, and the collectives over it (each in place,
/// waiting for its result).
pub struct ProcessGroup {
    store: *mut c_void,
    group: *mut c_void,
    rank: usize,
    world: usize,
    backend: GroupBackend,
    timeout_ms: i64,
}

// SAFETY: c10d's stores and backends are used from any thread (torch's DDP calls them from
// autograd's threads); the handles are owned here and freed once.
unsafe impl Send for ProcessGroup {}
// SAFETY: as above: c10d's backends take collectives from several threads (DDP's reducer
// does); ours are issued from one at a time.
unsafe impl Sync for ProcessGroup {}

impl ProcessGroup {
    /// Joins the rendezvous (rank 0 serves its store unless an agent does) and waits until every
    /// rank has joined, then builds the group on `backend`. A rank that does not come within the
    /// timeout is named in the error; so is a rendezvous that cannot be reached.
    pub fn join(rendezvous: &Rendezvous, backend: GroupBackend) -> Result<Self> {
        let Rendezvous {
            host,
            port,
            rank,
            world,
            ..
        } = rendezvous;
        let timeout_ms = rendezvous.timeout.as_millis().max(1) as i64;
        let where_ = format!(
            "joining the rendezvous at {host}:{port} (MASTER_ADDR, MASTER_PORT) as rank {rank} of {world}"
        );
        let host_c = CString::new(host.as_str()).context("MASTER_ADDR holds a NUL byte")?;
        let serves = *rank == 0 && !rendezvous.agent_store;
        let mut store = std::ptr::null_mut();
        // SAFETY: a NUL-terminated host and an out pointer the shim fills on success.
        let error = unsafe {
            timbre_ext_store_new(
                host_c.as_ptr(),
                c_int::from(*port),
                *rank as c_int,
                *world as c_int,
                timeout_ms,
                c_int::from(serves),
                &mut store,
            )
        };
        checked(error, &where_)?;
        let mut group = std::ptr::null_mut();
        let error = match backend {
            GroupBackend::Gloo => {
                let interface = rendezvous
                    .interface
                    .as_deref()
                    .map(CString::new)
                    .transpose()
                    .context("GLOO_SOCKET_IFNAME holds a NUL byte")?;
                // SAFETY: the live store, an optional NUL-terminated name, an out pointer.
                unsafe {
                    timbre_ext_gloo_new(
                        store,
                        *rank as c_int,
                        *world as c_int,
                        timeout_ms,
                        interface.as_ref().map_or(std::ptr::null(), |i| i.as_ptr()),
                        c_int::from(rendezvous.is_local()),
                        &mut group,
                    )
                }
            }
            GroupBackend::Nccl(device) => {
                let Some(nccl_new) = crate::cuda::nccl_new() else {
                    // SAFETY: the store made above, freed once.
                    unsafe { timbre_ext_store_free(store) };
                    bail!(
                        "{where_}: NCCL groups are not available in this build ({})",
                        crate::cuda::backend()
                            .problem
                            .as_deref()
                            .unwrap_or("it was built without NCCL's headers")
                    );
                };
                // SAFETY: the live store and an out pointer; nccl_new is cuda_nccl.cpp's.
                unsafe {
                    nccl_new(
                        store,
                        *rank as c_int,
                        *world as c_int,
                        timeout_ms,
                        device as c_int,
                        &mut group,
                    )
                }
            }
        };
        if let Err(e) = checked(error, &format!("{where_}: the {} group", backend.name())) {
            // SAFETY: the store made above, freed once.
            unsafe { timbre_ext_store_free(store) };
            return Err(e);
        }
        Ok(Self {
            store,
            group,
            rank: *rank,
            world: *world,
            backend,
            timeout_ms,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world(&self) -> usize {
        self.world
    }

    fn collective(&self, what: &str, error: *mut c_char) -> Result<()> {
        checked(
            error,
            &format!(
                "{what} over {} ranks ({}, this is rank {}; another rank died, hung past the {} s timeout or left the run)",
                self.world,
                self.backend.name(),
                self.rank,
                self.timeout_ms as f64 / 1000.0
            ),
        )
    }

    fn all_reduce_(&self, tensor: &Tensor, op: c_int, what: &str) -> Result<()> {
        // SAFETY: the live group and a live tensor borrowed for the call.
        let error =
            unsafe { timbre_ext_group_allreduce(self.group, tensor.as_ptr(), op, self.timeout_ms) };
        self.collective(what, error)
    }

    /// Every rank's `tensor` becomes the sum over the ranks.
    pub fn sum_(&self, tensor: &Tensor) -> Result<()> {
        self.all_reduce_(tensor, 0, "all-reduce (sum)")
    }

    /// Every rank's `tensor` becomes the elementwise maximum over the ranks.
    pub fn max_(&self, tensor: &Tensor) -> Result<()> {
        self.all_reduce_(tensor, 1, "all-reduce (max)")
    }

    /// Every rank's `tensor` becomes `root`'s.
    pub fn broadcast_(&self, tensor: &Tensor, root: usize) -> Result<()> {
        // SAFETY: the live group and a live tensor borrowed for the call.
        let error = unsafe {
            timbre_ext_group_broadcast(self.group, tensor.as_ptr(), root as c_int, self.timeout_ms)
        };
        self.collective("broadcast", error)
    }

    /// Returns when every rank has reached it.
    pub fn barrier(&self, device: Device) -> Result<()> {
        let token = Tensor::zeros([1], (Kind::Float, device));
        self.all_reduce_(&token, 0, "barrier")
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // SAFETY: both handles came from the shim and are freed once, the group first.
        unsafe {
            timbre_ext_group_free(self.group);
            timbre_ext_store_free(self.store);
        }
    }
}

#[cfg(test)]
mod tests;
