//! A post-processing chain for converted audio: an ordered list of effects, each with its
//! parameters, described in JSON (the preset format). The chain runs as a stream
//! ([`EffectChain::stream`]): blocks of any channel count go in, and each effect keeps only the
//! state it carries from block to block (filter states, delay lines, lookaheads), so a long song
//! needs no more memory than a short one; [`EffectChain::apply`] runs a whole buffer through the
//! same stream. The output keeps the input's length frame for frame (a lookahead makes the
//! output lag, never shifts it), so a processed vocal stays sample-aligned with what it is mixed
//! against (reverb and delay tails past the end are cut).
//!
//! Our own DSP rather than fundsp (0.23, MIT/Apache-2.0, builds here): fundsp is a streaming
//! graph library with no compressor or de-esser, a stereo-only reverb whose decay is not a set
//! RT60, and filters in f32; what it would supply (RBJ biquads, a delay line) is a few dozen
//! lines, and each effect here is tested against its parameters. The high-pass and the true-peak
//! limiter are enhancement's (`crate::enhance`), not second copies.

mod biquad;
mod dynamics;
mod modulation;
mod reverb;
mod stream;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::buffer::AudioBuffer;
pub use stream::EffectStream;

/// Effects in the order they run. The empty chain changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct EffectChain {
    /// The effects, first to run first.
    pub effects: Vec<Effect>,
}

/// One effect and its parameters; missing parameters take the defaults shown by
/// [`Effect::default_of`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Fixed gain.
    Gain(Gain),
    /// Zero-phase Butterworth high-pass.
    HighPass(HighPass),
    /// Biquad low-pass.
    LowPass(LowPass),
    /// One peaking EQ band.
    PeakingEq(PeakingEq),
    /// RMS compressor.
    Compressor(Compressor),
    /// High-band compressor for sibilance.
    DeEsser(DeEsser),
    /// Feedback delay (echo).
    Delay(Delay),
    /// Sine-swept chorus.
    Chorus(Chorus),
    /// Freeverb-style reverb.
    Reverb(Reverb),
    /// True-peak limiter.
    Limiter(Limiter),
}

/// A wrong chain: the effect (position from 1 and name) and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("not an effects chain: {0}")]
    /// The JSON does not parse or is not `{"effects": [...]}`; the text says why.
    Format(String),
    #[error("effect {position} ({name}): {message}")]
    /// An effect has no or an unknown name, or a parameter that is wrong or out of range.
    Effect {
        /// Place of the effect in the chain, from 1.
        position: usize,
        /// The effect's name as written, or "?" when it has none.
        name: String,
        /// What is wrong, in words.
        message: String,
    },
}

macro_rules! parameters {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident: $default:expr),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
        #[serde(default, deny_unknown_fields)]
        pub struct $name { $($(#[$fdoc])* pub $field: f64),* }

        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default),* }
            }
        }
    };
}

parameters!(
    /// A fixed gain.
    Gain {
        /// Gain in dB, -60 to 40; 0 leaves the level as it is.
        db: 0.0,
    }
);
parameters!(
    /// Zero-phase 4th-order Butterworth, as enhancement's.
    HighPass {
        /// Cutoff frequency in Hz, 10 to 20 000, below the Nyquist frequency.
        cutoff_hz: 80.0,
    }
);
parameters!(
    /// Second-order (12 dB/octave) RBJ low-pass.
    LowPass {
        /// Cutoff frequency in Hz, 20 to 40 000, below the Nyquist frequency.
        cutoff_hz: 12_000.0,
        /// Resonance, 0.1 to 20; 1/√2 (the default) is Butterworth, with no peak.
        q: std::f64::consts::FRAC_1_SQRT_2,
    }
);
parameters!(
    /// RBJ peaking (bell) EQ band.
    PeakingEq {
        /// Centre frequency in Hz, 20 to 40 000, below the Nyquist frequency.
        frequency_hz: 3_000.0,
        /// Boost (positive) or cut (negative) at the centre, in dB, -30 to 30.
        gain_db: 3.0,
        /// Bandwidth, 0.1 to 20; higher is narrower.
        q: 1.0,
    }
);
parameters!(
    /// Feed-forward, RMS detector, soft knee; levels in dBFS RMS (a full-scale sine reads -3).
    Compressor {
        /// Level above which gain is reduced, in dBFS RMS, -80 to 0.
        threshold_db: -18.0,
        /// Input dB over the threshold per output dB over it, 1 (no compression) to 100.
        ratio: 3.0,
        /// Width of the soft knee centred on the threshold, in dB, 0 (hard knee) to 24.
        knee_db: 0.0,
        /// Time constant for gain reduction to set in, in ms, 0 to 1000.
        attack_ms: 10.0,
        /// Time constant for gain reduction to let go, in ms, 1 to 5000.
        release_ms: 120.0,
        /// Gain added after compression, in dB, -24 to 40.
        makeup_db: 0.0,
    }
);
parameters!(
    /// Compresses only the band above `frequency_hz`, by its own level.
    DeEsser {
        /// Split frequency in Hz, 1000 to 20 000, below the Nyquist frequency.
        frequency_hz: 6_000.0,
        /// Level of the high band above which it is reduced, in dBFS RMS, -80 to 0.
        threshold_db: -30.0,
        /// Compression ratio of the high band, 1 to 100.
        ratio: 4.0,
    }
);
parameters!(
    /// `mix` is the wet share: the output is `(1 - mix)·dry + mix·wet`, here and below.
    Delay {
        /// Delay between repeats, in ms, 1 to 5000.
        time_ms: 250.0,
        /// Level of each repeat relative to the one before, 0 to 0.95.
        feedback: 0.3,
        /// Wet share, 0 (dry only) to 1 (wet only).
        mix: 0.25,
    }
);
parameters!(
    /// A delay swept by a sine; channels are swept a quarter turn apart.
    Chorus {
        /// Sweep rate in Hz, 0.01 to 20.
        rate_hz: 1.2,
        /// Sweep depth, ± this many ms around `delay_ms`, 0 to 20.
        depth_ms: 2.0,
        /// Centre delay of the sweep, in ms, 1 to 100.
        delay_ms: 15.0,
        /// Wet share, 0 (dry only) to 1 (wet only).
        mix: 0.4,
    }
);
parameters!(
    /// `decay_seconds` is the RT60 (at low frequencies when `damping` > 0, which shortens the
    /// highs).
    Reverb {
        /// Time for the tail to fall 60 dB, in seconds, 0.1 to 30.
        decay_seconds: 1.5,
        /// Delay before the reverb starts, in ms, 0 to 500.
        pre_delay_ms: 20.0,
        /// High-frequency damping in the feedback loops, 0 (none) to 0.99 (darkest).
        damping: 0.3,
        /// Wet share, 0 (dry only) to 1 (wet only).
        mix: 0.25,
    }
);
parameters!(
    /// True-peak ceiling, dBTP.
    Limiter {
        /// Highest true peak let through, in dBTP, -40 to 0.
        ceiling_db: -1.0,
    }
);

impl Effect {
    /// Every effect's name as written in JSON (the `effect` tag), in variant order.
    pub const NAMES: [&'static str; 10] = [
        "gain",
        "high_pass",
        "low_pass",
        "peaking_eq",
        "compressor",
        "de_esser",
        "delay",
        "chorus",
        "reverb",
        "limiter",
    ];

    /// The effect named `name` with its default parameters.
    pub fn default_of(name: &str) -> Option<Effect> {
        serde_json::from_value(serde_json::json!({ "effect": name })).ok()
    }

    /// Name as written in JSON (the `effect` tag), e.g. "high_pass".
    pub fn name(&self) -> &'static str {
        match self {
            Effect::Gain(_) => "gain",
            Effect::HighPass(_) => "high_pass",
            Effect::LowPass(_) => "low_pass",
            Effect::PeakingEq(_) => "peaking_eq",
            Effect::Compressor(_) => "compressor",
            Effect::DeEsser(_) => "de_esser",
            Effect::Delay(_) => "delay",
            Effect::Chorus(_) => "chorus",
            Effect::Reverb(_) => "reverb",
            Effect::Limiter(_) => "limiter",
        }
    }

    /// Each parameter's allowed range, as (name, value, min, max).
    fn ranges(&self) -> Vec<(&'static str, f64, f64, f64)> {
        match *self {
            Effect::Gain(p) => vec![("db", p.db, -60.0, 40.0)],
            Effect::HighPass(p) => vec![("cutoff_hz", p.cutoff_hz, 10.0, 20_000.0)],
            Effect::LowPass(p) => vec![
                ("cutoff_hz", p.cutoff_hz, 20.0, 40_000.0),
                ("q", p.q, 0.1, 20.0),
            ],
            Effect::PeakingEq(p) => vec![
                ("frequency_hz", p.frequency_hz, 20.0, 40_000.0),
                ("gain_db", p.gain_db, -30.0, 30.0),
                ("q", p.q, 0.1, 20.0),
            ],
            Effect::Compressor(p) => vec![
                ("threshold_db", p.threshold_db, -80.0, 0.0),
                ("ratio", p.ratio, 1.0, 100.0),
                ("knee_db", p.knee_db, 0.0, 24.0),
                ("attack_ms", p.attack_ms, 0.0, 1_000.0),
                ("release_ms", p.release_ms, 1.0, 5_000.0),
                ("makeup_db", p.makeup_db, -24.0, 40.0),
            ],
            Effect::DeEsser(p) => vec![
                ("frequency_hz", p.frequency_hz, 1_000.0, 20_000.0),
                ("threshold_db", p.threshold_db, -80.0, 0.0),
                ("ratio", p.ratio, 1.0, 100.0),
            ],
            Effect::Delay(p) => vec![
                ("time_ms", p.time_ms, 1.0, 5_000.0),
                ("feedback", p.feedback, 0.0, 0.95),
                ("mix", p.mix, 0.0, 1.0),
            ],
            Effect::Chorus(p) => vec![
                ("rate_hz", p.rate_hz, 0.01, 20.0),
                ("depth_ms", p.depth_ms, 0.0, 20.0),
                ("delay_ms", p.delay_ms, 1.0, 100.0),
                ("mix", p.mix, 0.0, 1.0),
            ],
            Effect::Reverb(p) => vec![
                ("decay_seconds", p.decay_seconds, 0.1, 30.0),
                ("pre_delay_ms", p.pre_delay_ms, 0.0, 500.0),
                ("damping", p.damping, 0.0, 0.99),
                ("mix", p.mix, 0.0, 1.0),
            ],
            Effect::Limiter(p) => vec![("ceiling_db", p.ceiling_db, -40.0, 0.0)],
        }
    }

    /// The first parameter outside its range, in words.
    fn check(&self) -> Result<(), String> {
        for (name, value, min, max) in self.ranges() {
            if !(min..=max).contains(&value) {
                return Err(format!(
                    "{name} must be between {min} and {max}, not {value}"
                ));
            }
        }
        Ok(())
    }

    /// A frequency the effect needs below the Nyquist frequency of `rate`, if any.
    fn band_edge_hz(&self) -> Option<(&'static str, f64)> {
        match *self {
            Effect::HighPass(p) => Some(("cutoff_hz", p.cutoff_hz)),
            Effect::LowPass(p) => Some(("cutoff_hz", p.cutoff_hz)),
            Effect::PeakingEq(p) => Some(("frequency_hz", p.frequency_hz)),
            Effect::DeEsser(p) => Some(("frequency_hz", p.frequency_hz)),
            _ => None,
        }
    }
}

pub(crate) fn db_to_gain(db: f64) -> f64 {
    10f64.powf(db / 20.0)
}

impl EffectChain {
    /// Reads a preset's JSON, `{"effects": [{"effect": "reverb", "decay_seconds": 2}, …]}`,
    /// naming the effect (by position and name) that is unknown or has a wrong parameter.
    pub fn from_json(json: &str) -> Result<EffectChain, ChainError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| ChainError::Format(e.to_string()))?;
        let items = value
            .get("effects")
            .and_then(|e| e.as_array())
            .ok_or_else(|| ChainError::Format("expected {\"effects\": [...]}".into()))?;
        let mut effects = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let error = |name: &str, message: String| ChainError::Effect {
                position: index + 1,
                name: name.to_string(),
                message,
            };
            let Some(name) = item.get("effect").and_then(|n| n.as_str()) else {
                return Err(error("?", "has no \"effect\" name".into()));
            };
            if !Effect::NAMES.contains(&name) {
                let known = Effect::NAMES.join(", ");
                return Err(error(name, format!("unknown effect (known: {known})")));
            }
            let effect: Effect =
                serde_json::from_value(item.clone()).map_err(|e| error(name, e.to_string()))?;
            effects.push(effect);
        }
        let chain = EffectChain { effects };
        chain.check()?;
        Ok(chain)
    }

    /// The chain as pretty-printed preset JSON, readable by [`EffectChain::from_json`].
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }

    /// Refuses parameters outside their ranges (a chain built in code or deserialized directly).
    pub fn check(&self) -> Result<(), ChainError> {
        for (index, effect) in self.effects.iter().enumerate() {
            effect.check().map_err(|message| ChainError::Effect {
                position: index + 1,
                name: effect.name().to_string(),
                message,
            })?;
        }
        Ok(())
    }

    /// Starts the chain over a stream of `channels` channels at `sample_rate`; refuses
    /// parameters out of range or a filter frequency at or above the Nyquist frequency.
    pub fn stream(&self, sample_rate: u32, channels: usize) -> Result<EffectStream, ChainError> {
        self.check()?;
        let nyquist = f64::from(sample_rate) / 2.0;
        for (index, effect) in self.effects.iter().enumerate() {
            if let Some((parameter, hz)) = effect.band_edge_hz()
                && hz >= nyquist
            {
                return Err(ChainError::Effect {
                    position: index + 1,
                    name: effect.name().to_string(),
                    message: format!(
                        "{parameter} {hz} must be below half the sample rate ({nyquist} Hz)"
                    ),
                });
            }
        }
        Ok(EffectStream::new(self, sample_rate, channels))
    }

    /// Runs the chain over `buffer` in place, as one block through [`EffectChain::stream`];
    /// refuses (before changing anything) what `stream` refuses.
    pub fn apply(&self, buffer: &mut AudioBuffer) -> Result<(), ChainError> {
        let mut stream = self.stream(buffer.sample_rate, buffer.channels.len())?;
        if buffer.frames() == 0 {
            return Ok(());
        }
        let mut out = stream.push(std::mem::take(&mut buffer.channels));
        for (channel, rest) in out.iter_mut().zip(stream.finish()) {
            channel.extend(rest);
        }
        buffer.channels = out;
        Ok(())
    }
}
