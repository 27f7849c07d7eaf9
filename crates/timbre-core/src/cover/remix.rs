//! The cover's remix stage: the converted vocals over the instrumental (and the second pass's
//! rest of the vocals), each with its gain, sample-aligned on the instrumental's clock (the
//! vocals resampled to its rate as a stream), then the true-peak limiter so nothing clips,
//! encoded block by block in the chosen format: no stem is held whole.

use anyhow::Result;
use serde_json::json;
use timbre_audio::enhance::TruePeakLimiter;
use timbre_audio::export::{EncodedWriter, Tags, write_tags};
use timbre_audio::resample::StreamResampler;
use timbre_audio::{BlockReader, DecodeOptions};

use super::request::CoverSettings;
use super::stages::{Made, Stage, Stages, temp_file};
use crate::db::takes::Take;
use crate::hashing;
use crate::library::Library;

/// The limiter's ceiling, dBTP: what streaming services ask of a master.
const CEILING_DBTP: f64 = -1.0;
/// Loudness matching moves the vocals at most this far, dB.
const MAX_MATCH_DB: f64 = 24.0;
/// Frames mixed at a time.
const BLOCK_FRAMES: usize = 1 << 16;

pub(super) struct Mix<'a> {
    /// The vocals the conversion started from: the loudness to match.
    pub original_vocals: &'a Take,
    /// The converted vocals, after the effects when there are any.
    pub converted: &'a Take,
    pub instrumental: &'a Take,
    /// What a second pass left of the vocals besides the lead.
    pub backing: Option<&'a Take>,
    pub settings: &'a CoverSettings,
    pub voice_name: Option<&'a str>,
}

/// The cover's take, from the cache or mixed.
pub(super) fn remix(stages: &mut Stages, mix: &Mix, notes: &mut Vec<String>) -> Result<Take> {
    let settings = mix.settings;
    let match_db = if settings.match_loudness {
        loudness_match_db(mix.original_vocals, mix.converted)
    } else {
        0.0
    };
    if match_db != 0.0 {
        notes.push(format!(
            "converted vocals moved {match_db:+.1} dB to the original vocals' loudness"
        ));
    }
    let vocal_db = settings.vocal_gain_db + match_db;
    let instrumental_db = settings.instrumental_gain_db;
    let format = settings.format;
    let key = hashing::cache_key(&[
        "cover-remix",
        &mix.converted.sha256,
        &mix.instrumental.sha256,
        mix.backing.map_or("-", |t| t.sha256.as_str()),
        &format!("{vocal_db:.6} {instrumental_db:.6} {CEILING_DBTP}"),
        &serde_json::to_string(&format)?,
    ]);
    let library = stages.library();
    let song_name = stages.song.name.clone();
    let voice = mix.voice_name.unwrap_or("original vocals");
    let mut takes = stages.cached_or_run(Stage::Remix, &key, &["cover"], |progress| {
        let file = temp_file(library, "cover", format.extension())?;
        let mut vocals = StemStream::open(library, mix.converted, vocal_db)?;
        let mut backing = mix
            .backing
            .map(|take| StemStream::open(library, take, instrumental_db))
            .transpose()?;
        let mut instrumental =
            timbre_audio::open_blocks(&library.take_path(mix.instrumental), &Default::default())?;
        let (rate, channels) = (instrumental.sample_rate(), instrumental.info().channels);
        let total = mix.instrumental.frames.max(1) as f64;
        let instrumental_gain = gain(instrumental_db);
        let mut limiter = TruePeakLimiter::new(rate, usize::from(channels), CEILING_DBTP);
        let mut sink = EncodedWriter::create(&file, format.codec(), rate, channels)?;
        let mut done = 0usize;
        while let Some(block) = instrumental.next_block(BLOCK_FRAMES)? {
            let frames = block.frames();
            let mut mixed = block.channels;
            for channel in &mut mixed {
                channel.iter_mut().for_each(|x| *x *= instrumental_gain);
            }
            vocals.add_to(&mut mixed, rate)?;
            if let Some(backing) = &mut backing {
                backing.add_to(&mut mixed, rate)?;
            }
            sink.write(&limiter.push(&mixed))?;
            done += frames;
            progress(done as f64 / total, "mixing".into())?;
        }
        let (rest, limited) = limiter.finish();
        sink.write(&rest)?;
        let name = format!("{song_name} (cover, {voice})");
        let tags = Tags {
            title: name.clone(),
            artist: voice.to_string(),
            comment: serde_json::to_string(settings)?,
        };
        sink.finish()?;
        write_tags(&file, &tags)?;
        Ok(vec![Made {
            role: "cover",
            operation: "cover",
            name,
            file,
            format: format.extension(),
            params: json!({
                "voice": mix.voice_name,
                "vocal_gain_db": settings.vocal_gain_db,
                "loudness_match_db": match_db,
                "instrumental_gain_db": instrumental_db,
                "converted_take_id": mix.converted.id,
                "instrumental_take_id": mix.instrumental.id,
                "peaks_limited": limited.peaks,
                "max_limiting_db": limited.max_reduction_db,
            }),
        }])
    })?;
    takes
        .remove("cover")
        .ok_or_else(|| anyhow::anyhow!("the remix stage left no cover take"))
}

/// The gain that brings the converted vocals to the original vocals' integrated loudness.
fn loudness_match_db(original: &Take, converted: &Take) -> f64 {
    match (original.loudness_lufs, converted.loudness_lufs) {
        (Some(original), Some(converted)) => {
            (original - converted).clamp(-MAX_MATCH_DB, MAX_MATCH_DB)
        }
        _ => 0.0,
    }
}

fn gain(db: f64) -> f32 {
    10f64.powf(db / 20.0) as f32
}

/// A stem read block by block, resampled to the mix's rate as a stream, with its gain.
struct StemStream {
    reader: BlockReader,
    resamplers: Option<Vec<StreamResampler>>,
    /// Samples at the mix's rate not mixed yet, per channel.
    pending: Vec<Vec<f32>>,
    ended: bool,
    gain: f32,
}

impl StemStream {
    fn open(library: &Library, take: &Take, gain_db: f64) -> Result<StemStream> {
        let reader =
            timbre_audio::open_blocks(&library.take_path(take), &DecodeOptions::default())?;
        let channels = usize::from(reader.info().channels);
        Ok(StemStream {
            reader,
            resamplers: None,
            pending: vec![Vec::new(); channels],
            ended: false,
            gain: gain(gain_db),
        })
    }

    /// Adds the next `mix` frames of the stem (silence past its end) to `mix`; a mono stem goes
    /// to every channel, a stereo one to a mono mix through its first channel.
    fn add_to(&mut self, mix: &mut [Vec<f32>], rate: u32) -> Result<()> {
        let frames = mix.first().map_or(0, Vec::len);
        while !self.ended && self.pending[0].len() < frames {
            self.read(rate)?;
        }
        for (c, channel) in mix.iter_mut().enumerate() {
            let stem = &self.pending[c.min(self.pending.len() - 1)];
            for (out, x) in channel.iter_mut().zip(stem) {
                *out += x * self.gain;
            }
        }
        for channel in &mut self.pending {
            channel.drain(..frames.min(channel.len()));
        }
        Ok(())
    }

    fn read(&mut self, rate: u32) -> Result<()> {
        let block = self.reader.next_block(BLOCK_FRAMES)?;
        if self.resamplers.is_none() && self.reader.sample_rate() != rate {
            let from = self.reader.sample_rate();
            self.resamplers = Some(
                (0..self.pending.len())
                    .map(|_| StreamResampler::new(from, rate))
                    .collect::<Result<_, _>>()?,
            );
        }
        match (block, &mut self.resamplers) {
            (Some(block), None) => {
                for (pending, channel) in self.pending.iter_mut().zip(&block.channels) {
                    pending.extend_from_slice(channel);
                }
            }
            (Some(block), Some(resamplers)) => {
                for ((pending, channel), resampler) in
                    self.pending.iter_mut().zip(&block.channels).zip(resamplers)
                {
                    resampler.push(channel, pending)?;
                }
            }
            (None, resamplers) => {
                for (pending, resampler) in self
                    .pending
                    .iter_mut()
                    .zip(resamplers.take().into_iter().flatten())
                {
                    resampler.finish(pending)?;
                }
                self.ended = true;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cover::separate::tests::take;
    use timbre_audio::AudioBuffer;

    #[test]
    fn loudness_matching_moves_the_vocals_to_the_original_within_its_bound() {
        let original = take(Some(-18.0), -3.0);
        assert_eq!(loudness_match_db(&original, &take(Some(-24.0), -9.0)), 6.0);
        assert_eq!(
            loudness_match_db(&original, &take(Some(-70.0), -50.0)),
            MAX_MATCH_DB
        );
        assert_eq!(loudness_match_db(&original, &take(None, -90.0)), 0.0);
    }

    #[test]
    fn a_mono_stem_goes_to_every_channel_and_ends_in_silence() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path()).unwrap();
        let path = dir.path().join("stem.wav");
        let stem = AudioBuffer::new(8_000, vec![vec![0.5; 100]]);
        timbre_audio::write_wav(&path, &stem, timbre_audio::SampleFormat::Float32).unwrap();
        let stored = library.store().ingest_file(&path, "wav").unwrap();
        let mut stem_take = take(None, 0.0);
        stem_take.sha256 = stored.sha256;
        let mut stream = StemStream::open(&library, &stem_take, -6.0206).unwrap();
        let mut mix = vec![vec![0.1f32; 150], vec![0.0f32; 150]];
        stream.add_to(&mut mix, 8_000).unwrap();
        for channel in &mix {
            assert!(channel[..100].iter().all(|x| (x - channel[0]).abs() < 1e-6));
        }
        assert!((mix[0][0] - 0.35).abs() < 1e-4 && (mix[1][0] - 0.25).abs() < 1e-4);
        assert_eq!(mix[1][100..], [0.0; 50]);
    }
}
