//! Live sessions over a real-time audio loop: a private PulseAudio daemon whose null sink
//! `loop` feeds its monitor, the default capture device, with ALSA's `default` (what cpal opens)
//! routed to it. Needs pulseaudio, pulseaudio-utils and libasound2-plugins
//! (`scripts/setup.sh --test`); without them the run fails and says so.
//!
//! `harness = false`: `main` starts the daemon and sets the environment that routes ALSA to it
//! before any other thread exists and before alsa-lib first reads its configuration, then runs
//! the tests one after another (one of them kills and restarts the daemon). A name given on the
//! command line runs only the tests whose names contain it.

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use timbre_audio::AudioErrorKind;
use timbre_audio::live::virtual_mic::{self, VirtualMic};
use timbre_audio::live::{
    self, BlockProcessor, LiveSession, LiveState, LiveStats, SessionConfig, latency,
};
use timbre_test_support::pulse::PulseLoop;

/// The measured round trip must be this close to the estimate.
const TOLERANCE_MS: f64 = 20.0;

/// The whole run takes well under a minute; past this, something hangs.
const RUN_LIMIT: Duration = Duration::from_secs(300);

type LoopTest = fn(&mut PulseLoop);

fn main() {
    // A child of this run, on the run's daemon (the environment it inherits routes it there).
    if std::env::args().any(|a| a == HOLD_VIRTUAL_MIC) {
        hold_a_virtual_mic();
    }
    let mut pulse = PulseLoop::start();
    // SAFETY: no other thread runs yet, and nothing has called into ALSA.
    unsafe { pulse.route_this_process() };
    pulse.fail_after(RUN_LIMIT);
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tests: [(&str, LoopTest); 10] = [
        (
            "loopback_round_trip_matches_the_estimate",
            loopback_round_trip_matches_the_estimate,
        ),
        (
            "reopens_after_the_pulse_daemon_restarts",
            reopens_after_the_pulse_daemon_restarts,
        ),
        (
            "a_device_unplugged_and_plugged_back_is_taken_up_again",
            a_device_unplugged_and_plugged_back_is_taken_up_again,
        ),
        (
            "a_96_khz_device_is_resampled_to_48_khz",
            a_96_khz_device_is_resampled_to_48_khz,
        ),
        (
            "a_device_back_at_another_rate_is_resampled_to_the_sessions",
            a_device_back_at_another_rate_is_resampled_to_the_sessions,
        ),
        (
            "a_failing_processor_stops_the_stream_and_says_why",
            a_failing_processor_stops_the_stream_and_says_why,
        ),
        (
            "a_missing_input_device_is_a_clear_error",
            a_missing_input_device_is_a_clear_error,
        ),
        (
            "the_virtual_microphone_carries_the_output_and_goes_with_the_session",
            the_virtual_microphone_carries_the_output_and_goes_with_the_session,
        ),
        (
            "a_crashed_sessions_virtual_microphone_is_removed_at_the_next_start",
            a_crashed_sessions_virtual_microphone_is_removed_at_the_next_start,
        ),
        (
            "the_virtual_microphone_comes_back_after_the_sound_server_restarts",
            the_virtual_microphone_comes_back_after_the_sound_server_restarts,
        ),
    ];
    let mut failed = Vec::new();
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        println!("test {name} ...");
        match catch_unwind(AssertUnwindSafe(|| test(&mut pulse))) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(name);
            }
        }
    }
    drop(pulse);
    if !failed.is_empty() {
        eprintln!("failed: {failed:?}");
        std::process::exit(1);
    }
}

/// Returns its input: the session's own buffering is all the latency.
struct Passthrough(usize);

impl BlockProcessor for Passthrough {
    fn block_size(&self) -> usize {
        self.0
    }

    fn process(&mut self, input: &[f32]) -> anyhow::Result<Vec<f32>> {
        Ok(input.to_vec())
    }
}

/// A session on the default devices returning its input in 20 ms blocks.
fn passthrough_on_the_defaults() -> LiveSession {
    LiveSession::start(
        SessionConfig::default(),
        Box::new(|rate| Ok(Box::new(Passthrough(latency::block_frames(20.0, rate))))),
    )
    .unwrap()
}

fn wait_for(
    session: &LiveSession,
    what: &str,
    secs: u64,
    done: impl Fn(&LiveStats) -> bool,
) -> LiveStats {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let stats = session.stats();
        if done(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {stats:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Attempts before a measurement that stays inconsistent fails the test.
const ATTEMPTS: usize = 3;

/// Measures the loop's round trip. On a loaded machine PulseAudio can drop a few ms of the
/// loop's audio (its own underruns, which no device reports) and the bursts then disagree:
/// such a run is measured again, up to [`ATTEMPTS`] times; any other result is returned.
fn measure(block_ms: f64) -> live::LoopbackRun {
    let mut attempt = 1;
    loop {
        let run = live::measure(&SessionConfig::default(), block_ms, 4, -12.0).unwrap();
        if run.result.reason != Some(live::loopback::LoopbackFailure::Inconsistent)
            || attempt == ATTEMPTS
        {
            return run;
        }
        println!(
            "attempt {attempt}: inconsistent, delays {:?}; measuring again",
            run.result.delays
        );
        attempt += 1;
    }
}

fn loopback_round_trip_matches_the_estimate(_pulse: &mut PulseLoop) {
    let inputs = live::list_input_devices().unwrap();
    let outputs = live::list_output_devices().unwrap();
    println!("inputs: {inputs:?}\noutputs: {outputs:?}");
    assert!(inputs.iter().any(|d| d.is_default), "{inputs:?}");
    assert!(outputs.iter().any(|d| d.is_default), "{outputs:?}");

    for block_ms in [100.0, 40.0] {
        let run = measure(block_ms);
        let measured = run.result.round_trip_ms.unwrap_or(f64::NAN);
        println!(
            "block {block_ms} ms at {} Hz: round trip measured {measured:.1} ms, estimated \
             {:.1} ms (block {:.1} + prefill {:.1} + input {:?} + output {:?} ms reported), \
             jitter {:?} ms, snr {:?} dB, overflows {}, underruns {}",
            run.sample_rate,
            run.estimated_ms,
            run.block_ms,
            run.block_ms,
            run.input_latency_ms,
            run.output_latency_ms,
            run.result.jitter_ms(),
            run.result.snr_db,
            run.input_overflows,
            run.output_underruns,
        );
        assert!(run.result.ok, "{run:#?}");
        assert!(
            run.input_latency_ms.is_some() && run.output_latency_ms.is_some(),
            "{run:#?}"
        );
        assert_eq!(
            run.estimated_ms,
            latency::estimate_latency_ms(
                run.block_ms,
                0.0,
                run.input_latency_ms.unwrap(),
                run.output_latency_ms.unwrap()
            )
        );
        assert!(
            (measured - run.estimated_ms).abs() <= TOLERANCE_MS,
            "measured {measured:.1} ms, estimated {:.1} ms: {run:#?}",
            run.estimated_ms
        );
    }
}

fn reopens_after_the_pulse_daemon_restarts(pulse: &mut PulseLoop) {
    let session = passthrough_on_the_defaults();
    let before = wait_for(&session, "blocks to flow", 10, |s| s.blocks_processed >= 10);
    assert_eq!(before.state, LiveState::Running);

    pulse.kill();
    let lost = wait_for(&session, "the session to notice", 10, |s| {
        s.state == LiveState::Reopening
    });
    println!("after the daemon died: {:?}", lost.message);
    assert!(
        lost.message
            .as_deref()
            .unwrap_or("")
            .contains("opening it again"),
        "{lost:#?}"
    );
    // Nothing to reopen yet: it keeps trying.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(session.stats().state, LiveState::Reopening);

    pulse.restart();
    let counted = session.stats().blocks_processed;
    let back = wait_for(&session, "the session to come back", 20, |s| {
        s.state == LiveState::Running && s.blocks_processed >= counted + 10
    });
    println!(
        "running again: {} blocks, {} overflows, {} underruns",
        back.blocks_processed, back.input_overflows, back.output_underruns
    );
    assert!(back.message.is_none(), "{back:#?}");
    let recording = session.stop().unwrap();
    assert!(recording.is_none());
}

/// The index of the module that made the loop's null sink.
fn loop_module(pulse: &PulseLoop) -> String {
    let modules = pulse.pactl(&["list", "short", "modules"]);
    modules
        .lines()
        .find(|line| line.contains("module-null-sink") && line.contains("sink_name=loop"))
        .and_then(|line| line.split('\t').next())
        .unwrap_or_else(|| panic!("no loop module in:\n{modules}"))
        .to_string()
}

fn a_device_unplugged_and_plugged_back_is_taken_up_again(pulse: &mut PulseLoop) {
    let session = passthrough_on_the_defaults();
    wait_for(&session, "blocks to flow", 10, |s| s.blocks_processed >= 10);

    // The loop's sink, and its monitor (the input), go as an unplugged card's would: the
    // server moves the streams to what is left (its dummy sink), and the session carries on.
    pulse.pactl(&["unload-module", &loop_module(pulse)]);
    std::thread::sleep(Duration::from_millis(1000));
    let unplugged = session.stats();
    println!(
        "unplugged: {:?} {:?}; playing on:\n{}",
        unplugged.state,
        unplugged.message,
        pulse.pactl(&["list", "short", "sink-inputs"])
    );
    assert_ne!(unplugged.state, LiveState::Failed, "{unplugged:#?}");

    // Plugged back: the server has the device again, and makes it the default once more.
    pulse.pactl(&[
        "load-module",
        "module-null-sink",
        "sink_name=loop",
        "rate=48000",
    ]);
    pulse.pactl(&["set-default-sink", "loop"]);
    pulse.pactl(&["set-default-source", "loop.monitor"]);
    let counted = session.stats().blocks_processed;
    let back = wait_for(
        &session,
        "the session to take the device up again",
        20,
        |s| s.state == LiveState::Running && s.blocks_processed >= counted + 10,
    );
    println!(
        "plugged back: {} blocks, {} overflows, {} underruns",
        back.blocks_processed, back.input_overflows, back.output_underruns
    );
    let playing = pulse.pactl(&["list", "short", "sink-inputs"]);
    let sinks = pulse.pactl(&["list", "short", "sinks"]);
    let loop_index = sinks
        .lines()
        .find(|line| line.split('\t').nth(1) == Some("loop"))
        .and_then(|line| line.split('\t').next())
        .unwrap();
    assert!(
        playing
            .lines()
            .any(|line| line.split('\t').nth(1) == Some(loop_index)),
        "the output does not play on the device plugged back:\n{playing}\n{sinks}"
    );
    session.stop().unwrap();
}

/// Fails on its fourth block.
struct FailsLater {
    block: usize,
    calls: usize,
}

impl BlockProcessor for FailsLater {
    fn block_size(&self) -> usize {
        self.block
    }

    fn process(&mut self, input: &[f32]) -> anyhow::Result<Vec<f32>> {
        self.calls += 1;
        anyhow::ensure!(self.calls < 4, "the model ran out of memory");
        Ok(input.to_vec())
    }
}

fn a_failing_processor_stops_the_stream_and_says_why(_pulse: &mut PulseLoop) {
    let config = SessionConfig {
        record: true,
        ..SessionConfig::default()
    };
    let session = LiveSession::start(
        config,
        Box::new(|rate| {
            let block = latency::block_frames(20.0, rate);
            Ok(Box::new(FailsLater { block, calls: 0 }))
        }),
    )
    .unwrap();
    let rate = session.rate();
    let failed = wait_for(&session, "the failure", 10, |s| {
        s.state == LiveState::Failed
    });
    assert_eq!(
        failed.processor_error.as_deref(),
        Some("the model ran out of memory")
    );
    assert!(
        failed
            .message
            .as_deref()
            .unwrap()
            .contains("the processor failed"),
        "{failed:#?}"
    );
    assert_eq!(failed.blocks_processed, 3);
    let recording = session.stop().unwrap().expect("record was asked for");
    // What was processed before the failure is kept.
    let block = latency::block_frames(20.0, rate);
    assert_eq!(recording.input.frames(), 3 * block);
    assert_eq!(recording.output.frames(), 3 * block);
    assert_eq!(recording.input.sample_rate, rate);
}

fn a_missing_input_device_is_a_clear_error(_pulse: &mut PulseLoop) {
    let config = SessionConfig {
        input: Some("no such microphone".into()),
        ..SessionConfig::default()
    };
    let err = LiveSession::start(config, Box::new(|_| panic!("never built")))
        .err()
        .expect("a missing device must fail");
    assert_eq!(err.kind, AudioErrorKind::Device);
    assert_eq!(
        err.to_string(),
        "no input device named \"no such microphone\""
    );
    let config = SessionConfig {
        output: Some("no such speaker".into()),
        ..SessionConfig::default()
    };
    let err = LiveSession::start(config, Box::new(|_| panic!("never built")))
        .err()
        .expect("a missing device must fail");
    assert_eq!(
        err.to_string(),
        "no output device named \"no such speaker\""
    );
}

fn a_96_khz_device_is_resampled_to_48_khz(pulse: &mut PulseLoop) {
    let module = pulse.pactl(&[
        "load-module",
        "module-null-sink",
        "sink_name=loop96",
        "rate=96000",
    ]);
    pulse.pactl(&["set-default-sink", "loop96"]);
    pulse.pactl(&["set-default-source", "loop96.monitor"]);
    let result = catch_unwind(AssertUnwindSafe(|| {
        let session = passthrough_on_the_defaults();
        assert_eq!(session.rate(), 48000);
        let stats = wait_for(&session, "blocks to flow", 10, |s| s.blocks_processed >= 20);
        let input = stats.input_device.clone().unwrap();
        let output = stats.output_device.clone().unwrap();
        println!("input {input:?}, output {output:?}");
        assert_eq!((input.sample_rate, output.sample_rate), (96000, 96000));
        assert_eq!(stats.state, LiveState::Running);
        assert_eq!(stats.block_size, 960);
        session.stop().unwrap();
    }));
    pulse.pactl(&["set-default-sink", "loop"]);
    pulse.pactl(&["set-default-source", "loop.monitor"]);
    pulse.pactl(&["unload-module", module.trim()]);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

fn a_device_back_at_another_rate_is_resampled_to_the_sessions(pulse: &mut PulseLoop) {
    let session = passthrough_on_the_defaults();
    let before = wait_for(&session, "blocks to flow", 10, |s| s.blocks_processed >= 10);
    assert_eq!(before.input_device.unwrap().sample_rate, 48_000);
    let result = catch_unwind(AssertUnwindSafe(|| {
        pulse.restart_at(96_000);
        wait_for(&session, "the session to notice", 10, |s| {
            s.state == LiveState::Reopening
        });
        let counted = session.stats().blocks_processed;
        let back = wait_for(&session, "the session to come back", 20, |s| {
            s.state == LiveState::Running && s.blocks_processed >= counted + 20
        });
        let (input, output) = (back.input_device.unwrap(), back.output_device.unwrap());
        println!("back at {} / {} Hz", input.sample_rate, output.sample_rate);
        assert_eq!((input.sample_rate, output.sample_rate), (96_000, 96_000));
        // The processor keeps its rate and its blocks: the rings resample to the new device's.
        assert_eq!(
            (session.rate(), back.sample_rate, back.block_size),
            (48_000, 48_000, 960)
        );
    }));
    session.stop().unwrap();
    pulse.restart_at(48_000);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// The argument that makes this binary a process holding a virtual microphone until killed.
const HOLD_VIRTUAL_MIC: &str = "--hold-virtual-mic";

fn hold_a_virtual_mic() -> ! {
    let mic = VirtualMic::create().unwrap();
    println!("{}", mic.source());
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Plays a 440 Hz sine at half scale, whatever comes in.
struct Sine {
    block: usize,
    rate: f32,
    phase: f32,
}

impl BlockProcessor for Sine {
    fn block_size(&self) -> usize {
        self.block
    }

    fn process(&mut self, input: &[f32]) -> anyhow::Result<Vec<f32>> {
        let step = std::f32::consts::TAU * 440.0 / self.rate;
        Ok(input
            .iter()
            .map(|_| {
                self.phase = (self.phase + step) % std::f32::consts::TAU;
                0.5 * self.phase.sin()
            })
            .collect())
    }
}

/// 0.7 s of what another program records from `source` (48 kHz mono), after 0.3 s settling.
fn record_from(source: &str) -> Vec<f32> {
    let mut recorder = Command::new("pacat")
        .args([
            "--record",
            "--raw",
            "--format=float32le",
            "--rate=48000",
            "--channels=1",
        ])
        .args(["--latency-msec=20", "-d", source])
        .stdout(Stdio::piped())
        .spawn()
        .expect("pacat (pulseaudio-utils) records");
    let mut bytes = vec![0u8; 48_000 * 4];
    recorder
        .stdout
        .take()
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    recorder.kill().unwrap();
    recorder.wait().unwrap();
    let samples: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    samples[14_400..].to_vec()
}

fn rms(samples: &[f32]) -> f32 {
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

fn sources(pulse: &PulseLoop) -> String {
    pulse.pactl(&["list", "short", "sources"])
}

fn the_virtual_microphone_carries_the_output_and_goes_with_the_session(pulse: &mut PulseLoop) {
    let session = sine_into_a_virtual_mic();
    let running = wait_for(&session, "blocks to flow", 10, |s| s.blocks_processed >= 10);
    let source = running
        .virtual_mic
        .clone()
        .expect("the session names its microphone");
    let listed = sources(pulse);
    assert!(
        listed.contains(&source),
        "{source} is not among the sources:\n{listed}"
    );
    let description = pulse.pactl(&["list", "sources"]);
    assert!(
        description.contains(virtual_mic::DESCRIPTION),
        "{description}"
    );

    let (heard, default_sink) = std::thread::scope(|scope| {
        let other = scope.spawn(|| record_from("loop.monitor"));
        (record_from(&source), other.join().unwrap())
    });
    // 440 Hz crosses zero 880 times a second; the window is 0.7 s.
    let crossings = heard
        .windows(2)
        .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
        .count();
    println!(
        "virtual microphone: rms {:.3}, {crossings} zero crossings in 0.7 s; default sink's \
         monitor: rms {:.4}; underruns {}",
        rms(&heard),
        rms(&default_sink),
        session.stats().output_underruns
    );
    assert!(
        rms(&heard) > 0.25,
        "the microphone does not carry the output: rms {}",
        rms(&heard)
    );
    assert!(
        (600..=632).contains(&crossings),
        "{crossings} zero crossings: not the 440 Hz sine"
    );
    assert!(
        rms(&default_sink) < 0.01,
        "the output still plays on the default sink"
    );

    session.stop().unwrap();
    let listed = sources(pulse);
    assert!(
        !listed.contains("timbre_studio_voice"),
        "left after stop:\n{listed}"
    );
}

/// A session playing the sine into a virtual microphone, running.
fn sine_into_a_virtual_mic() -> LiveSession {
    let config = SessionConfig {
        virtual_mic: true,
        ..SessionConfig::default()
    };
    let session = LiveSession::start(
        config,
        Box::new(|rate| {
            let block = latency::block_frames(20.0, rate);
            Ok(Box::new(Sine {
                block,
                rate: rate as f32,
                phase: 0.0,
            }))
        }),
    )
    .unwrap();
    wait_for(&session, "blocks to flow", 10, |s| s.blocks_processed >= 10);
    session
}

fn the_virtual_microphone_comes_back_after_the_sound_server_restarts(pulse: &mut PulseLoop) {
    let session = sine_into_a_virtual_mic();
    let source = session.stats().virtual_mic.unwrap();
    pulse.restart();
    wait_for(&session, "the session to notice", 10, |s| {
        s.state == LiveState::Reopening
    });
    let back = wait_for(&session, "the session to run again", 20, |s| {
        s.state == LiveState::Running
    });
    println!("back after the restart: {:?}", back.message);
    let listed = sources(pulse);
    assert!(
        listed.contains(&source),
        "{source} did not come back:\n{listed}"
    );
    let heard = record_from(&source);
    assert!(
        rms(&heard) > 0.25,
        "the microphone is silent after the restart: rms {}",
        rms(&heard)
    );
    session.stop().unwrap();
    assert!(!sources(pulse).contains("timbre_studio_voice"));
}

fn a_crashed_sessions_virtual_microphone_is_removed_at_the_next_start(pulse: &mut PulseLoop) {
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .arg(HOLD_VIRTUAL_MIC)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = holder.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0] as char);
    }
    assert!(
        sources(pulse).contains(line.trim()),
        "the holder made no microphone: {line:?}"
    );
    // kill -9: no destructor runs, the modules stay.
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(
        sources(pulse).contains(line.trim()),
        "the modules went with the process"
    );

    // What the next start does first; a running process's microphone is left alone.
    let mine = VirtualMic::create().unwrap();
    let listed = sources(pulse);
    assert!(
        !listed.contains(line.trim()),
        "the crashed run's microphone is left:\n{listed}"
    );
    assert!(listed.contains(mine.source()), "{listed}");
    assert_eq!(virtual_mic::remove_leftovers().unwrap(), 0);
    drop(mine);
    assert!(!sources(pulse).contains("timbre_studio_voice"));
}
