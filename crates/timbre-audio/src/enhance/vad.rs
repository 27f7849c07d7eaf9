//! Silence trimming with the WebRTC voice-activity detector: leading and trailing silence cut to a
//! margin, long pauses shortened. Detection runs on a 16 kHz mono mix made block by block; the
//! cut is done in place.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use webrtc_vad::{SampleRate, Vad, VadMode};

use super::{ProcessError, Progress};
use crate::buffer::AudioBuffer;
use crate::resample::StreamResampler;

const VAD_RATE: u32 = 16_000;
const VAD_FRAME: usize = 480;
const VAD_FRAME_SECS: f64 = 0.03;
const BLOCK_FRAMES: usize = 1 << 16;
/// Fades at each cut, so a join never clicks.
const JOIN_FADE_SECS: f64 = 0.005;
/// The detector's thresholds are absolute, so its input is scaled to this peak first.
const DETECTOR_PEAK: f32 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default)]
/// How silence trimming cuts: margins, longest pause kept, and detector mode.
pub struct TrimOptions {
    /// Silence kept before the first and after the last speech.
    pub margin_secs: f64,
    /// Pauses longer than this are shortened to it; None keeps every pause.
    pub max_pause_secs: Option<f64>,
    /// 0 (keeps the most) to 3 (the WebRTC detector's most aggressive mode).
    pub aggressiveness: u8,
}

impl Default for TrimOptions {
    fn default() -> Self {
        TrimOptions {
            margin_secs: 0.2,
            max_pause_secs: Some(0.6),
            aggressiveness: 1,
        }
    }
}

/// What trimming found and did.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Trimmed {
    pub speech_segments: usize,
    pub frames_removed: usize,
}

/// Trims `buffer` in place; `None` (and nothing cut) when no speech was found.
pub(super) fn trim(
    buffer: &mut AudioBuffer,
    options: &TrimOptions,
    progress: &mut Progress<'_>,
) -> Result<Option<Trimmed>, ProcessError> {
    let Some(plan) = plan(buffer, options, progress)? else {
        return Ok(None);
    };
    let fade = seconds_to_frames(JOIN_FADE_SECS, buffer.sample_rate).max(1);
    let total = buffer.frames();
    for channel in &mut buffer.channels {
        compact(channel, &plan.keep, fade);
    }
    Ok(Some(Trimmed {
        speech_segments: plan.speech.len(),
        frames_removed: total - buffer.frames(),
    }))
}

/// Where the detector heard speech and which sample ranges trimming keeps.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TrimPlan {
    pub speech: Vec<Range<usize>>,
    pub keep: Vec<Range<usize>>,
}

pub(super) fn plan(
    buffer: &AudioBuffer,
    options: &TrimOptions,
    progress: &mut Progress<'_>,
) -> Result<Option<TrimPlan>, ProcessError> {
    let rate = buffer.sample_rate;
    let total = buffer.frames();
    let verdicts = speech_frames(buffer, options.aggressiveness, progress)?;
    let to_sample =
        |frame: usize| seconds_to_frames(frame as f64 * VAD_FRAME_SECS, rate).min(total);
    let speech: Vec<Range<usize>> = voiced_runs(&verdicts)
        .into_iter()
        .map(|run| to_sample(run.start)..to_sample(run.end))
        .filter(|run| !run.is_empty())
        .collect();
    if speech.is_empty() {
        return Ok(None);
    }
    let margin = seconds_to_frames(options.margin_secs, rate);
    let max_pause = options.max_pause_secs.map(|s| seconds_to_frames(s, rate));
    let keep = kept_ranges(&speech, total, margin, max_pause);
    Ok(Some(TrimPlan { speech, keep }))
}

fn seconds_to_frames(seconds: f64, rate: u32) -> usize {
    (seconds.max(0.0) * f64::from(rate)).round() as usize
}

/// The WebRTC detector over a stream of 16 kHz mono audio: a verdict per 30 ms frame as the
/// frames fill. Its thresholds are absolute: `gain` scales the input first.
pub struct SpeechDetector {
    vad: Vad,
    frame: Vec<i16>,
    scale: f32,
}

impl SpeechDetector {
    /// A detector of `aggressiveness` 0 (keeps the most) to 3 (the most aggressive mode).
    pub fn new(aggressiveness: u8, gain: f32) -> SpeechDetector {
        let mode = match aggressiveness {
            0 => VadMode::Quality,
            1 => VadMode::LowBitrate,
            2 => VadMode::Aggressive,
            _ => VadMode::VeryAggressive,
        };
        SpeechDetector {
            vad: Vad::new_with_rate_and_mode(SampleRate::Rate16kHz, mode),
            frame: Vec::with_capacity(VAD_FRAME),
            scale: gain * 32_767.0,
        }
    }

    /// Feeds `samples_16k`, pushing a verdict (speech or not) for each frame it completes.
    pub fn push(&mut self, samples_16k: &[f32], verdicts: &mut Vec<bool>) {
        for &x in samples_16k {
            self.frame
                .push((x * self.scale).clamp(-32_768.0, 32_767.0) as i16);
            if self.frame.len() == VAD_FRAME {
                verdicts.push(self.vad.is_voice_segment(&self.frame).unwrap_or(false));
                self.frame.clear();
            }
        }
    }
}

/// The detector's verdict for each 30 ms frame of the mono mix.
fn speech_frames(
    buffer: &AudioBuffer,
    aggressiveness: u8,
    progress: &mut Progress<'_>,
) -> Result<Vec<bool>, ProcessError> {
    let peak = crate::analysis::peak(buffer);
    let gain = if peak > 0.0 {
        DETECTOR_PEAK / peak
    } else {
        1.0
    };
    let mut detector =
        SpeechDetector::new(aggressiveness, gain / buffer.channels.len().max(1) as f32);
    let mut resampler = StreamResampler::new(buffer.sample_rate, VAD_RATE)?;
    let (mut mono, mut at_16k) = (Vec::new(), Vec::new());
    let mut verdicts = Vec::new();
    let total = buffer.frames();
    for start in (0..total).step_by(BLOCK_FRAMES) {
        let end = (start + BLOCK_FRAMES).min(total);
        mono.clear();
        mono.extend((start..end).map(|i| buffer.channels.iter().map(|c| c[i]).sum::<f32>()));
        resampler.push(&mono, &mut at_16k)?;
        detector.push(&at_16k, &mut verdicts);
        at_16k.clear();
        if !progress(end as f64 / total as f64) {
            return Err(ProcessError::Cancelled);
        }
    }
    resampler.finish(&mut at_16k)?;
    detector.push(&at_16k, &mut verdicts);
    Ok(verdicts)
}

/// Runs of consecutive speech frames, as frame-index ranges.
fn voiced_runs(speech: &[bool]) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (i, &voiced) in speech.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if voiced && run.end == i => run.end = i + 1,
            _ if voiced => runs.push(i..i + 1),
            _ => {}
        }
    }
    runs
}

/// The sample ranges to keep: from `margin` before the first speech to `margin` after the last,
/// less the middle of every pause longer than `max_pause` (half of `max_pause` stays on each side).
fn kept_ranges(
    speech: &[Range<usize>],
    total: usize,
    margin: usize,
    max_pause: Option<usize>,
) -> Vec<Range<usize>> {
    let first = speech[0].start.saturating_sub(margin);
    let last = (speech[speech.len() - 1].end + margin).min(total);
    let mut keep = Vec::with_capacity(speech.len());
    keep.push(first..last);
    let Some(max_pause) = max_pause else {
        return keep;
    };
    for pair in speech.windows(2) {
        let (pause_start, pause_end) = (pair[0].end, pair[1].start);
        if pause_end - pause_start <= max_pause {
            continue;
        }
        let current = keep.pop().expect("keep starts non-empty");
        keep.push(current.start..pause_start + max_pause / 2);
        keep.push(pause_end - (max_pause - max_pause / 2)..current.end);
    }
    keep
}

/// Moves the kept ranges to the front of `samples`, fading each side of every cut, and drops the
/// rest.
fn compact(samples: &mut Vec<f32>, keep: &[Range<usize>], fade: usize) {
    let total = samples.len();
    let mut written = 0;
    for (i, range) in keep.iter().enumerate() {
        samples.copy_within(range.clone(), written);
        let part = &mut samples[written..written + range.len()];
        let fade = fade.min(part.len() / 2);
        let ramp = |k: usize| k as f32 / fade as f32;
        if i > 0 || range.start > 0 {
            part[..fade]
                .iter_mut()
                .enumerate()
                .for_each(|(k, x)| *x *= ramp(k));
        }
        if i + 1 < keep.len() || range.end < total {
            let len = part.len();
            part[len - fade..]
                .iter_mut()
                .enumerate()
                .for_each(|(k, x)| *x *= ramp(fade - 1 - k));
        }
        written += range.len();
    }
    samples.truncate(written);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_are_shortened_and_ends_cut_to_the_margin() {
        let speech = [100..200, 250..300, 1000..1100];
        let keep = kept_ranges(&speech, 2000, 50, Some(100));
        assert_eq!(keep, vec![50..350, 950..1150]);
        assert_eq!(kept_ranges(&speech, 2000, 50, None), vec![50..1150]);
        let whole = kept_ranges(&[0..10, 12..13], 15, 50, None);
        assert_eq!((whole.len(), whole[0].clone()), (1, 0..15));
    }

    #[test]
    fn compacting_joins_ranges_with_fades() {
        let mut samples = vec![1.0f32; 100];
        compact(&mut samples, &[10..30, 60..90], 4);
        assert_eq!(samples.len(), 50);
        assert_eq!(samples[0], 0.0);
        assert_eq!(samples[10], 1.0);
        assert_eq!(samples[19], 0.0);
        assert_eq!(samples[20], 0.0);
        assert!(samples[22] > 0.0 && samples[22] < 1.0);
        assert_eq!(samples[49], 0.0);
    }

    #[test]
    fn runs_of_speech_frames() {
        let speech = [false, true, true, false, true, false, false];
        assert_eq!(voiced_runs(&speech), vec![1..3, 4..5]);
        assert!(voiced_runs(&[false; 4]).is_empty());
    }
}
