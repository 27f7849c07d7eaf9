//! The ranks of a data-parallel training, from rank 0's side (the `train` job): for a training
//! on several devices the job starts one `timbre train worker` process per further device on
//! this machine and serves the rendezvous; started by torchrun or SLURM (`timbre train worker`
//! on every rank), it joins theirs. Rank 0 alone writes checkpoints, previews, metrics and the
//! library's rows; the workers (`worker`) step on their shares and write nothing but their log.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tch::Device;
use timbre_torch_ext::distributed::{GroupBackend, ProcessGroup, Rendezvous, collective_timeout};

use super::files::TrainingFiles;
use super::request::plan_of;
use crate::db::trainings;
use crate::devices;
use crate::library::Library;

/// The rendezvous and device of a `timbre train worker` process whose rank 0 runs the job here.
static LAUNCHED: OnceLock<(Rendezvous, Device)> = OnceLock::new();

/// This process is rank 0 of a group that torchrun or SLURM launched, on `device`: its `train`
/// job joins `rendezvous` instead of starting workers of its own.
pub fn launched_as(rendezvous: Rendezvous, device: Device) {
    // A second call (there is none) would keep the first rendezvous.
    let _ = LAUNCHED.set((rendezvous, device));
}

/// How the `train` job names the devices it trains on: one, several (`cuda:0,cuda:1`), or a
/// launched rank 0's (`cuda:0 (rank 0 of 8)`).
pub fn devices_name(devices: &[Device], fallback: Device) -> String {
    match (LAUNCHED.get(), devices) {
        (Some((rendezvous, device)), _) => {
            format!(
                "{} (rank 0 of {})",
                devices::name(*device),
                rendezvous.world
            )
        }
        (None, [] | [_]) => devices::name(devices.first().copied().unwrap_or(fallback)),
        (None, devices) => {
            let names: Vec<String> = devices.iter().map(|&d| devices::name(d)).collect();
            names.join(",")
        }
    }
}

/// A launched rank's device: `name`, else `cuda:LOCAL_RANK` where there is CUDA, else the CPU.
pub fn rank_device(rendezvous: &Rendezvous, name: Option<&str>) -> Result<Device> {
    match name {
        Some(name) => timbre_nn::device::parse_device(name),
        None if tch::Cuda::is_available() => Ok(Device::Cuda(rendezvous.local_rank)),
        None => Ok(Device::Cpu),
    }
}

/// The devices this process's `train` job trains on: the launched rank's, else those the
/// training names (none: the `device` setting's).
pub fn devices_of(request_devices: &[String]) -> Result<Vec<Device>> {
    match LAUNCHED.get() {
        Some((_, device)) => Ok(vec![*device]),
        None => training_devices(request_devices),
    }
}

/// A worker process this job started.
struct Worker {
    rank: usize,
    device: Device,
    child: Child,
    log: PathBuf,
}

/// Rank 0's group and the workers it started.
pub struct Ranks {
    group: Arc<ProcessGroup>,
    workers: Mutex<Workers>,
}

impl Ranks {
    /// The group of a training on `devices` (the first is this process's), or the launched one;
    /// None when it trains alone.
    pub fn start(
        data_dir: &std::path::Path,
        training_id: i64,
        devices: &[Device],
        files: &TrainingFiles,
    ) -> Result<Option<Ranks>> {
        if let Some((rendezvous, device)) = LAUNCHED.get() {
            let group = ProcessGroup::join(rendezvous, GroupBackend::for_device(*device))?;
            return Ok(Some(Ranks {
                group: Arc::new(group),
                workers: Mutex::new(Workers(Vec::new())),
            }));
        }
        if devices.len() < 2 {
            return Ok(None);
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .context("finding a free port for the training's rendezvous")?
            .port();
        let timeout = collective_timeout()?;
        let rendezvous =
            |rank: usize| Rendezvous::on_this_machine(port, rank, devices.len(), timeout);
        std::fs::create_dir_all(files.root())
            .with_context(|| format!("{}: cannot create", files.root().display()))?;
        let program = worker_program()?;
        let mut workers = Workers(Vec::new());
        for (rank, &device) in devices.iter().enumerate().skip(1) {
            let log = files.root().join(format!("worker-{rank}.log"));
            let stderr = std::fs::File::create(&log)
                .with_context(|| format!("{}: cannot create", log.display()))?;
            let child = Command::new(&program)
                .arg("--data-dir")
                .arg(data_dir)
                .args(["train", "worker", "--training", &training_id.to_string()])
                .args(["--device", &devices::name(device)])
                .envs(rendezvous(rank).env_vars())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .with_context(|| format!("{}: cannot start rank {rank}", program.display()))?;
            workers.0.push(Worker {
                rank,
                device,
                child,
                log,
            });
        }
        match ProcessGroup::join(&rendezvous(0), GroupBackend::for_device(devices[0])) {
            Ok(group) => Ok(Some(Ranks {
                group: Arc::new(group),
                workers: Mutex::new(workers),
            })),
            Err(error) => Err(workers.explain(error)),
        }
    }

    /// The group.
    pub fn group(&self) -> &Arc<ProcessGroup> {
        &self.group
    }

    /// `error` with the reason a worker gave, when one of them exited.
    pub fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        match self.workers.lock() {
            Ok(mut workers) => workers.explain(error),
            Err(_) => error,
        }
    }
}

/// The worker processes a job started; dropped, they are stopped.
struct Workers(Vec<Worker>);

impl Workers {
    /// `error` with the exit and the last log line of a worker that exited, if one did within
    /// [`EXIT_GRACE`].
    fn explain(&mut self, error: anyhow::Error) -> anyhow::Error {
        let started = Instant::now();
        loop {
            for worker in self.0.iter_mut() {
                if let Ok(Some(status)) = worker.child.try_wait() {
                    return error.context(worker.exit_report(status));
                }
            }
            if started.elapsed() > EXIT_GRACE {
                return error;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for worker in self.0.iter_mut() {
            let _ = worker.child.kill();
            let _ = worker.child.wait();
        }
    }
}

impl Worker {
    fn exit_report(&self, status: std::process::ExitStatus) -> String {
        let how = match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => format!("was killed ({status})"),
        };
        let last = std::fs::read_to_string(&self.log)
            .ok()
            .and_then(|log| {
                let line = log.lines().rev().find(|l| !l.trim().is_empty())?;
                Some(format!(": {}", line.trim()))
            })
            .unwrap_or_default();
        format!(
            "rank {} ({}) {how}{last} (its log: {})",
            self.rank,
            devices::name(self.device),
            self.log.display()
        )
    }
}

/// How long a failed collective waits for the worker that caused it to be seen exiting.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The devices a training's `devices` names (none: train on the `device` setting's); refused
/// when one does not parse, a CUDA device is named twice, or CPU and GPUs are mixed (the ranks
/// of a group share one collective library).
pub fn training_devices(names: &[String]) -> Result<Vec<Device>> {
    let mut devices = Vec::with_capacity(names.len());
    for name in names {
        let device = timbre_nn::device::parse_device(name)
            .map_err(|e| crate::error::invalid_input(format!("training device {name:?}: {e:#}")))?;
        if device.is_cuda() && devices.contains(&device) {
            return Err(crate::error::invalid_input(format!(
                "training devices: {name} is named twice (one worker per GPU)"
            )));
        }
        devices.push(device);
    }
    if devices.iter().any(|d| d.is_cuda()) && !devices.iter().all(|d| d.is_cuda()) {
        return Err(crate::error::invalid_input(format!(
            "training devices {}: train on GPUs or on the CPU, not both",
            names.join(",")
        )));
    }
    Ok(devices)
}

/// Sets the devices a stopped or failed training resumes on (another number of them is fine:
/// every rank resumes from rank 0's last checkpoint).
pub fn set_training_devices(library: &Library, id: i64, names: Vec<String>) -> Result<()> {
    training_devices(&names)?;
    let training = trainings::require(&library.conn(), id)?;
    let mut plan = plan_of(&training)?;
    plan.request.devices = names;
    let params = serde_json::to_value(&plan)?;
    library.edit(|conn| trainings::set_params(conn, id, &params))
}

/// The `timbre` CLI that runs the workers: this program when it is the CLI, else the one beside
/// it (the app ships both in one folder).
fn worker_program() -> Result<PathBuf> {
    let this = std::env::current_exe().context("finding this program's path")?;
    let cli = format!("timbre{}", std::env::consts::EXE_SUFFIX);
    if this.file_name().is_some_and(|name| name == cli.as_str()) {
        return Ok(this);
    }
    let beside = this.with_file_name(&cli);
    anyhow::ensure!(
        beside.exists(),
        "{}: the timbre CLI, which runs a training's further devices, is not beside the app",
        beside.display()
    );
    Ok(beside)
}
