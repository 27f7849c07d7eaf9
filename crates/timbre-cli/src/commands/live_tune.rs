//! `timbre live tune`: the `live_tune` job run in this process, a line per block size tried and
//! the pick with its latency; with `--measure`, the round trip through the devices with the pick.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;
use timbre_core::live::tune::{self, TuneCandidate, TuneReport, TuneRequest};
use timbre_core::live::{self, LatencyMeasurement};

use super::live::{DeviceArgs, StreamArgs, measure_lines};
use crate::output::Output;

/// What `--json` prints: the job's report, and the measurement when one was asked for.
#[derive(Serialize)]
struct TuneOutcome {
    report: TuneReport,
    measurement: Option<LatencyMeasurement>,
}

pub fn run(
    data_dir: Option<&Path>,
    out: &Output,
    stream: &StreamArgs,
    rate: u32,
    measure_on: Option<DeviceArgs>,
) -> Result<ExitCode> {
    let system = super::open_jobs(data_dir)?;
    let request = TuneRequest {
        voice: stream.voice(system.library())?,
        params: stream.params()?,
        sample_rate: rate,
    };
    let job = tune::submit(&system, request)?;
    let [outcome] =
        super::run_jobs::<TuneReport>(&system, vec![("live tune".into(), job.id)], out)?
            .try_into()
            .map_err(|_| anyhow::anyhow!("job {} gave no outcome", job.id))?;
    let Some(report) = outcome.result else {
        out.note(&outcome.failure_line());
        return Ok(ExitCode::FAILURE);
    };
    let measurement = match (&report.params, measure_on) {
        (Some(params), Some(devices)) => Some(live::measure_latency(
            devices.input,
            devices.output,
            params.block_ms,
            params.crossfade_ms,
        )?),
        _ => None,
    };
    let found = report.params.is_some();
    let outcome = TuneOutcome {
        report,
        measurement,
    };
    out.print(&outcome, || lines(&outcome));
    Ok(if found {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn lines(outcome: &TuneOutcome) -> String {
    let report = &outcome.report;
    let limit = report.budget_share * 100.0;
    let mut lines: Vec<String> = report.candidates.iter().map(candidate_line).collect();
    lines.push(match (&report.params, report.latency_ms) {
        (Some(params), Some(latency)) => format!(
            "pick: --block-ms {:.0} --crossfade-ms {:.0} (every block within {limit:.0} % of its \
             duration); latency ~{latency:.0} ms before the devices' own",
            params.block_ms, params.crossfade_ms
        ),
        _ => format!(
            "no block up to {:.0} ms keeps within {limit:.0} % of its duration: try a shorter \
             context, a lighter pitch method (pm) or a GPU",
            tune::BLOCK_SIZES_MS[tune::BLOCK_SIZES_MS.len() - 1]
        ),
    });
    if let Some(measurement) = &outcome.measurement {
        lines.push(measure_lines(measurement));
    }
    lines.join("\n")
}

fn candidate_line(candidate: &TuneCandidate) -> String {
    let t = &candidate.times;
    format!(
        "{:>4.0} ms blocks, {:.0} ms crossfade: {:.1} ms at most in {} blocks ({:.0} % of the \
         block){}",
        candidate.block_ms,
        candidate.crossfade_ms,
        t.max_ms,
        t.blocks,
        100.0 * t.max_ms / t.budget_ms.max(f64::MIN_POSITIVE),
        if candidate.keeps_up { "" } else { ": too slow" }
    )
}
