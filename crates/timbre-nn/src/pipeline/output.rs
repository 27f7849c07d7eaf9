//! The end of the reference pipeline over the whole output, done in passes over a scratch file
//! instead of in memory: the RMS mix (its envelopes are of the whole output, two values a
//! second), the resample (a stream that equals the whole-array one), and the peak-safe scaling
//! (its peak is of the whole output, found in a first pass, applied in the second).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use anyhow::{Context, Result};
use timbre_audio::filter::{envelope_hop, frame_value, interpolate_at, mix_sample};
use timbre_audio::resample::StreamResampler;

use super::ConvertOptions;
use super::render::{OutputSink, Rendered};

/// Samples read at a time.
const BLOCK: usize = 1 << 16;
/// Samples mixed at a time: the mix spreads each block over every core, so a small block spends
/// more on starting threads than on the mix.
const MIX_BLOCK: usize = 1 << 20;

/// The synthesized output before the mix, as raw f32 in a temporary file.
pub(super) struct Scratch {
    file: BufWriter<File>,
    len: usize,
}

impl Scratch {
    pub fn new(dir: Option<&std::path::Path>) -> Result<Scratch> {
        let file = match dir {
            Some(dir) => tempfile::tempfile_in(dir)
                .with_context(|| format!("creating a scratch file in {}", dir.display())),
            None => tempfile::tempfile().context("creating a scratch file for the output"),
        }?;
        Ok(Scratch {
            file: BufWriter::new(file),
            len: 0,
        })
    }

    pub fn append(&mut self, samples: &[f32]) -> Result<()> {
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.file.write_all(&bytes)?;
        self.len += samples.len();
        Ok(())
    }

    fn into_file(self) -> Result<(File, usize)> {
        let file = self
            .file
            .into_inner()
            .map_err(|e| e.into_error())
            .context("writing the output scratch file")?;
        Ok((file, self.len))
    }
}

/// Reads a scratch file back in blocks.
struct Blocks {
    reader: BufReader<File>,
    left: usize,
    bytes: Vec<u8>,
}

impl Blocks {
    fn new(file: &File, len: usize) -> Result<Blocks> {
        let mut file = file.try_clone()?;
        file.seek(SeekFrom::Start(0))?;
        Ok(Blocks {
            reader: BufReader::new(file),
            left: len,
            bytes: Vec::new(),
        })
    }

    /// The next `n` samples (fewer at the end) into `out`.
    fn next(&mut self, n: usize, out: &mut Vec<f32>) -> Result<()> {
        let n = n.min(self.left);
        self.bytes.resize(4 * n, 0);
        self.reader
            .read_exact(&mut self.bytes)
            .context("reading the output scratch file")?;
        out.clear();
        out.extend(
            self.bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        self.left -= n;
        Ok(())
    }
}

/// Mixes, resamples and scales the scratch output into `sink`.
pub(super) fn finish(
    scratch: Scratch,
    input_rms: &[f64],
    rate: u32,
    options: &ConvertOptions,
    sink: &mut dyn OutputSink,
) -> Result<Rendered> {
    let (file, len) = scratch.into_file()?;
    let mix = if options.voice.rms_mix_rate != 1.0 && !input_rms.is_empty() {
        Some(output_envelope(&file, len, rate)?).filter(|e| !e.is_empty())
    } else {
        None
    };
    let target = options.resample_rate.filter(|&r| r != rate && r >= 16_000);
    let pass = Pass {
        file: &file,
        len,
        rate,
        target,
        mix: mix
            .as_deref()
            .map(|m| (input_rms, m, options.voice.rms_mix_rate)),
    };
    // The mix and the resample run once, into a second scratch file, while the peak is found;
    // the scaling pass then only reads it back.
    let mut peak = 0f32;
    let mut processed = Scratch::new(sink.scratch_dir())?;
    pass.run(&mut |piece| {
        peak = piece.iter().fold(peak, |m, s| m.max(s.abs()));
        processed.append(piece)
    })?;
    let (processed, processed_len) = processed.into_file()?;
    // The reference scales the output down when its peak would pass 0.99, before int16.
    let scale = peak / 0.99;
    let mut rendered = Rendered {
        sample_rate: target.unwrap_or(rate),
        samples: 0,
        peak: 0.0,
    };
    sink.begin(rendered.sample_rate)?;
    let mut blocks = Blocks::new(&processed, processed_len)?;
    let mut piece = Vec::new();
    while rendered.samples < processed_len {
        blocks.next(BLOCK, &mut piece)?;
        if scale > 1.0 {
            piece.iter_mut().for_each(|s| *s /= scale);
        }
        rendered.samples += piece.len();
        rendered.peak = piece.iter().fold(rendered.peak, |m, s| m.max(s.abs()));
        sink.write(&piece)?;
    }
    Ok(rendered)
}

/// One pass over the output: mixed and resampled, in order.
struct Pass<'a> {
    file: &'a File,
    len: usize,
    rate: u32,
    target: Option<u32>,
    /// The input's envelope, the output's, and the mix rate.
    mix: Option<(&'a [f64], &'a [f64], f32)>,
}

impl Pass<'_> {
    fn run(&self, sink: &mut dyn FnMut(&[f32]) -> Result<()>) -> Result<()> {
        let mut blocks = Blocks::new(self.file, self.len)?;
        let mut resampler = self
            .target
            .map(|target| StreamResampler::new(self.rate, target))
            .transpose()?;
        let (mut block, mut resampled) = (Vec::new(), Vec::new());
        let mut at = 0;
        while at < self.len {
            blocks.next(MIX_BLOCK, &mut block)?;
            if let Some(mix) = self.mix {
                mix_block(&mut block, at, self.len, mix);
            }
            at += block.len();
            match &mut resampler {
                Some(resampler) => {
                    resampled.clear();
                    resampler.push(&block, &mut resampled)?;
                    sink(&resampled)?;
                }
                None => sink(&block)?,
            }
        }
        if let Some(resampler) = resampler {
            resampled.clear();
            resampler.finish(&mut resampled)?;
            sink(&resampled)?;
        }
        Ok(())
    }
}

/// The RMS mix of the samples from `at` on, on every core: two powers a sample make it the
/// slowest part of a GPU conversion when done on one.
fn mix_block(
    block: &mut [f32],
    at: usize,
    len: usize,
    (source, target, rate): (&[f64], &[f64], f32),
) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = block.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (i, part) in block.chunks_mut(chunk).enumerate() {
            scope.spawn(move || {
                for (k, sample) in part.iter_mut().enumerate() {
                    let j = at + i * chunk + k;
                    let source = interpolate_at(source, len, j);
                    let target = interpolate_at(target, len, j);
                    *sample = mix_sample(*sample, source, target, rate);
                }
            });
        }
    });
}

/// `timbre_audio::filter::envelope` of the whole scratch output, read a hop at a time: frame
/// `i` covers hops `i − 1` and `i`, summed in order as the whole-array version does.
fn output_envelope(file: &File, len: usize, rate: u32) -> Result<Vec<f64>> {
    let hop = envelope_hop(rate);
    if hop == 0 {
        return Ok(Vec::new());
    }
    let mut blocks = Blocks::new(file, len)?;
    let (mut previous, mut current) = (Vec::new(), Vec::new());
    let frames = 1 + len / hop;
    let mut envelope = Vec::with_capacity(frames);
    for _ in 0..frames {
        blocks.next(hop, &mut current)?;
        envelope.push(frame_value(previous.iter().chain(&current), 2 * hop));
        std::mem::swap(&mut previous, &mut current);
    }
    Ok(envelope)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_of(samples: &[f32]) -> (File, usize) {
        let mut scratch = Scratch::new(None).unwrap();
        scratch.append(samples).unwrap();
        (scratch.file.into_inner().unwrap(), samples.len())
    }

    fn signal(len: usize) -> Vec<f32> {
        (0..len)
            .map(|i| {
                let t = i as f32;
                (0.3 + 0.2 * (t * 0.0003).sin()) * (t * 0.05).sin() * 2.5
            })
            .collect()
    }

    #[test]
    fn envelope_read_in_hops_equals_the_whole_array_one() {
        for len in [0, 1, 999, 1000, 1001, 25_432] {
            let samples = signal(len);
            let (file, len) = scratch_of(&samples);
            let streamed = output_envelope(&file, len, 2000).unwrap();
            assert_eq!(streamed, timbre_audio::filter::envelope(&samples, 2000));
        }
    }

    #[test]
    fn finishing_equals_mixing_resampling_and_scaling_the_whole_array() {
        let input: Vec<f32> = signal(48_000).iter().map(|s| s * 0.1).collect();
        let output = signal(150_000);
        let input_rms = timbre_audio::filter::envelope(&input, 16_000);
        for (mix, resample) in [(0.25, None), (1.0, Some(16_000)), (0.5, Some(44_100))] {
            let options = ConvertOptions {
                voice: crate::voice::VoiceParams {
                    rms_mix_rate: mix,
                    ..Default::default()
                },
                resample_rate: resample,
                ..ConvertOptions::default()
            };
            let mut whole = if mix != 1.0 {
                timbre_audio::filter::change_rms(&input, 16_000, &output, 40_000, mix)
            } else {
                output.clone()
            };
            if let Some(target) = resample {
                let buffer = timbre_audio::AudioBuffer::new(40_000, vec![whole]);
                whole = timbre_audio::resample(&buffer, target).unwrap().channels[0].clone();
            }
            let peak = whole.iter().fold(0f32, |m, s| m.max(s.abs())) / 0.99;
            if peak > 1.0 {
                whole.iter_mut().for_each(|s| *s /= peak);
            }
            let mut scratch = Scratch::new(None).unwrap();
            for piece in output.chunks(7_777) {
                scratch.append(piece).unwrap();
            }
            let mut streamed = super::super::Converted {
                samples: Vec::new(),
                sample_rate: 0,
            };
            let rendered = finish(scratch, &input_rms, 40_000, &options, &mut streamed).unwrap();
            assert_eq!(streamed.samples, whole, "mix {mix}, resample {resample:?}");
            assert_eq!(streamed.sample_rate, rendered.sample_rate);
            assert_eq!(rendered.samples, whole.len());
            assert_eq!(rendered.sample_rate, resample.unwrap_or(40_000));
        }
    }
}
