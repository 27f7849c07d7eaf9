//! A private PulseAudio daemon whose null sink `loop` is a real-time audio loop: what plays on
//! the sink comes back on its monitor, the default capture device. With it, ALSA's `default`
//! device (what cpal opens) goes through PulseAudio: the pulseaudio package's
//! `/etc/alsa/conf.d/99-pulse.conf` makes `default` the pulse plugin (libasound2-plugins) when a
//! server answers at the time alsa-lib first reads its configuration.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SETUP_HINT: &str = "run `make setup-test` (scripts/setup.sh --test installs pulseaudio, \
    pulseaudio-utils and libasound2-plugins)";
const ALSA_PULSE_CONF: &str = "/usr/share/alsa/pulse-alsa.conf";

/// A running daemon; dropping it kills the daemon and removes its folder.
pub struct PulseLoop {
    daemon: Option<Child>,
    dir: PathBuf,
    /// The null sink's rate, in Hz.
    rate: u32,
}

impl PulseLoop {
    /// Starts the daemon in a fresh private runtime folder. Panics, saying what to install, when
    /// pulseaudio, pactl or the ALSA plugin is missing.
    pub fn start() -> PulseLoop {
        assert!(
            Path::new(ALSA_PULSE_CONF).is_file(),
            "{ALSA_PULSE_CONF} is missing, so ALSA's default device cannot reach PulseAudio: \
             {SETUP_HINT}"
        );
        let dir = std::env::temp_dir().join(format!(
            "timbre-pulse-{}-{}",
            std::process::id(),
            unique_suffix()
        ));
        std::fs::create_dir_all(&dir).expect("create the pulse runtime folder");
        set_private(&dir);
        let mut pulse = PulseLoop {
            daemon: None,
            dir,
            rate: 48_000,
        };
        pulse.launch();
        pulse
    }

    /// `unix:<socket>`, for `PULSE_SERVER`.
    pub fn server(&self) -> String {
        format!("unix:{}", self.dir.join("pulse/native").display())
    }

    /// The variables that route this process's audio to the daemon: `PULSE_SERVER`, and
    /// `XDG_RUNTIME_DIR`, `HOME` and `PULSE_COOKIE` so no client state (libpulse writes a
    /// cookie under `~/.config/pulse`) is read or written outside its folder.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let dir = self.dir.display().to_string();
        vec![
            ("PULSE_SERVER", self.server()),
            ("XDG_RUNTIME_DIR", dir.clone()),
            ("HOME", dir.clone()),
            ("PULSE_COOKIE", format!("{dir}/cookie")),
        ]
    }

    /// Sets [`PulseLoop::env`] in this process, so ALSA's `default` reaches the daemon.
    ///
    /// # Safety
    /// Call it before any other thread runs (in a test binary with `harness = false`, first thing
    /// in `main`), and before the first ALSA call: alsa-lib decides where `default` goes once.
    pub unsafe fn route_this_process(&self) {
        for (key, value) in self.env() {
            // SAFETY: the caller guarantees no other thread reads the environment meanwhile.
            unsafe { std::env::set_var(key, value) };
        }
    }

    /// Kills the daemon (a device vanishing under a running stream).
    pub fn kill(&mut self) {
        if let Some(mut daemon) = self.daemon.take() {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }

    /// Ends the process with a failure after `limit`, asking the daemon to exit first: a test
    /// that hangs (in a sound driver, say) fails the run instead of holding it.
    pub fn fail_after(&self, limit: Duration) {
        let mut exit_daemon = self.command("pactl");
        exit_daemon.arg("exit");
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            eprintln!("the run took over {limit:?}: stopped as hung");
            let _ = exit_daemon.output();
            std::process::exit(1);
        });
    }

    /// Starts the daemon again on the same socket, with the same sink.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Starts the daemon again with the sink at `rate` Hz: a device that comes back at another
    /// rate.
    pub fn restart_at(&mut self, rate: u32) {
        self.rate = rate;
        self.restart();
    }

    /// Runs `pactl` against the daemon; panics with its output when it fails.
    pub fn pactl(&self, args: &[&str]) -> String {
        let out = self
            .command("pactl")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("pactl could not run ({e}): {SETUP_HINT}"));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "pactl {args:?} failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.envs(self.env());
        command
    }

    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir.join("daemon.log")).expect("create the log");
        // A fixed rate: the null sink otherwise switches between 44.1 and 48 kHz with its
        // clients, and PulseAudio's own resampling adds latency no device reports.
        let sink = format!("--load=module-null-sink sink_name=loop rate={}", self.rate);
        let daemon = self
            .command("pulseaudio")
            .args([
                "-n",
                "--daemonize=no",
                "--exit-idle-time=-1",
                "--load=module-native-protocol-unix",
                &sink,
                "--load=module-always-sink",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("pulseaudio could not start ({e}): {SETUP_HINT}"));
        self.daemon = Some(daemon);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let ready = self
                .command("pactl")
                .arg("info")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap_or_else(|e| panic!("pactl could not run ({e}): {SETUP_HINT}"));
            if ready.success() {
                break;
            }
            if let Some(status) = self
                .daemon
                .as_mut()
                .and_then(|d| d.try_wait().ok().flatten())
            {
                panic!("pulseaudio exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "pulseaudio did not answer in 15 s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.pactl(&["set-default-sink", "loop"]);
        self.pactl(&["set-default-source", "loop.monitor"]);
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }
}

impl Drop for PulseLoop {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// pulseaudio refuses a runtime folder that others can read.
fn set_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .expect("make the pulse runtime folder private");
}

fn unique_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
