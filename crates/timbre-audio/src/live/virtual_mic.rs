//! "Timbre Studio voice", a microphone any other program (a call, a game, OBS) can pick while a
//! live session runs: a PulseAudio null sink the session's output plays into, and a source
//! remapped from its monitor, which is what other programs see. Made through the sound server's
//! own module commands (`pactl`, which PipeWire's PulseAudio layer answers too), so nothing is
//! installed. Both modules carry the owner's process id in their properties: they are unloaded
//! when the session ends, and by [`remove_leftovers`] at the next start after a crash.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use super::devices::device_error;
use crate::error::AudioError;

/// What other programs list the microphone as.
pub const DESCRIPTION: &str = "Timbre Studio voice";

/// The property that names the process owning a module.
const OWNER: &str = "timbre.owner_pid";

/// The microphone while it exists; dropping it unloads its modules.
#[derive(Debug)]
pub struct VirtualMic {
    sink: String,
    source: String,
    modules: Vec<u32>,
}

impl VirtualMic {
    /// Creates the sink and the microphone for this process (removing a crashed run's first).
    pub fn create() -> Result<VirtualMic, AudioError> {
        remove_leftovers()?;
        let pid = std::process::id();
        let mut mic = VirtualMic {
            sink: format!("timbre_studio_voice_{pid}"),
            source: format!("timbre_studio_voice_mic_{pid}"),
            modules: Vec::new(),
        };
        mic.load()?;
        Ok(mic)
    }

    fn load(&mut self) -> Result<(), AudioError> {
        let pid = std::process::id();
        let sink = load_module(&[
            "module-null-sink",
            &format!("sink_name={}", self.sink),
            &properties("sink", &format!("{DESCRIPTION} (what it plays)"), pid),
        ])?;
        self.modules.push(sink);
        let source = load_module(&[
            "module-remap-source",
            &format!("master={}.monitor", self.sink),
            &format!("source_name={}", self.source),
            &properties("source", DESCRIPTION, pid),
        ])?;
        self.modules.push(source);
        Ok(())
    }

    /// Makes the microphone again, under the same names, when the sound server no longer has
    /// it (the server restarted, and its modules went with it).
    pub(crate) fn ensure(&mut self) -> Result<(), AudioError> {
        let sinks = pactl(&["list", "short", "sinks"])?;
        if sinks
            .lines()
            .any(|line| line.split('\t').nth(1) == Some(self.sink.as_str()))
        {
            return Ok(());
        }
        self.modules.clear();
        self.load()
    }

    /// The sink the session's output plays into.
    pub fn sink(&self) -> &str {
        &self.sink
    }

    /// The source other programs record from (listed as [`DESCRIPTION`]).
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl Drop for VirtualMic {
    fn drop(&mut self) {
        // The source first: it records from the sink's monitor.
        for module in self.modules.iter().rev() {
            let _ = pactl(&["unload-module", &module.to_string()]);
        }
    }
}

/// `sink_properties='device.description="…" timbre.owner_pid=N'`: the server's own quoting.
fn properties(kind: &str, description: &str, pid: u32) -> String {
    format!("{kind}_properties='device.description=\"{description}\" {OWNER}={pid}'")
}

/// Unloads the modules of virtual microphones whose process has ended (a crash, a kill -9);
/// the number unloaded. Those of a running process are left alone.
pub fn remove_leftovers() -> Result<usize, AudioError> {
    let listing = pactl(&["list", "short", "modules"])?;
    let mut orphans: Vec<u32> = listing
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let index = fields.next()?.trim().parse().ok()?;
            let argument = fields.nth(1)?;
            let owner = argument.split(&format!("{OWNER}=")).nth(1)?;
            let pid: String = owner.chars().take_while(char::is_ascii_digit).collect();
            let alive = Path::new("/proc").join(&pid).exists();
            (!pid.is_empty() && !alive).then_some(index)
        })
        .collect();
    orphans.sort_unstable_by(|a, b| b.cmp(a));
    for module in &orphans {
        pactl(&["unload-module", &module.to_string()])?;
    }
    Ok(orphans.len())
}

/// The server's indexes of this process's playback streams.
pub(crate) fn own_playback() -> Result<BTreeSet<u32>, AudioError> {
    #[derive(Deserialize)]
    struct SinkInput {
        index: u32,
        properties: std::collections::HashMap<String, String>,
    }
    let listing = pactl(&["-f", "json", "list", "sink-inputs"])?;
    let inputs: Vec<SinkInput> = serde_json::from_str(&listing)
        .map_err(|e| device_error(format!("pactl listed the playback streams unreadably: {e}")))?;
    let pid = std::process::id().to_string();
    Ok(inputs
        .into_iter()
        .filter(|input| input.properties.get("application.process.id") == Some(&pid))
        .map(|input| input.index)
        .collect())
}

/// Moves the first of this process's playback streams not in `before` (the output: it opens
/// before the monitor) to `sink`.
pub(crate) fn route_output(sink: &str, before: &BTreeSet<u32>) -> Result<(), AudioError> {
    let output = own_playback()?.difference(before).next().copied().ok_or_else(|| {
        device_error(format!(
            "the output is not a stream of the sound server, so it cannot feed \"{DESCRIPTION}\": \
             use the default output with the virtual microphone"
        ))
    })?;
    pactl(&["move-sink-input", &output.to_string(), sink]).map(drop)
}

fn load_module(args: &[&str]) -> Result<u32, AudioError> {
    let mut command = vec!["load-module"];
    command.extend_from_slice(args);
    let index = pactl(&command)?;
    index
        .trim()
        .parse()
        .map_err(|_| device_error(format!("pactl load-module {} answered {index:?}", args[0])))
}

/// Runs `pactl` against the session's sound server; its output, or an error saying what failed.
fn pactl(args: &[&str]) -> Result<String, AudioError> {
    let out = Command::new("pactl").args(args).output().map_err(|e| {
        device_error(format!(
            "the virtual microphone needs PulseAudio or PipeWire's pulse layer and pactl \
             (pulseaudio-utils): pactl could not run: {e}"
        ))
    })?;
    if !out.status.success() {
        return Err(device_error(format!(
            "pactl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_quoted_as_the_server_parses_module_arguments() {
        assert_eq!(
            properties("source", DESCRIPTION, 42),
            "source_properties='device.description=\"Timbre Studio voice\" timbre.owner_pid=42'"
        );
    }
}
