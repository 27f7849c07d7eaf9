//! The latency estimate shown while running, as rvc-next 0.2.16's `engine/stream/latency.py`
//! computes it (without its split-stream ring: input and output here are always two streams
//! joined by the session's rings, with no extra ring between them).

use crate::enhance::Rnnoise;

/// SOLA searches this far for the best splice, so the engine's output trails by up to it.
pub const SOLA_SEARCH_MS: f64 = 10.0;

/// The block sizes (ms) tuning tries and a running session proposes, smallest first.
pub const BLOCK_SIZES_MS: [f64; 10] = [
    40.0, 60.0, 80.0, 100.0, 150.0, 200.0, 250.0, 350.0, 500.0, 750.0,
];

/// The most of a block's length its processing should take: the rest is room for a busier
/// moment of the machine. Tuning picks by it; a running session proposes by it.
pub const BUDGET_SHARE: f64 = 0.8;

/// A block in samples, rounded to whole 10 ms frames, as the streaming engine sizes it.
pub fn block_frames(block_ms: f64, sample_rate: u32) -> usize {
    let frame = (sample_rate / 100) as usize;
    frame.max((block_ms / 10.0).round() as usize * frame)
}

/// How far the streaming engine's output trails its input, at most: crossfade + 10 ms, plus one
/// RNNoise frame (10 ms) for each denoise pass (input, output) the stream runs. (The
/// reference's TorchGate input denoise adds `min(crossfade, 40 ms)` instead.)
pub fn engine_delay_ms(crossfade_ms: f64, denoise_passes: u32) -> f64 {
    let frame_ms = 1000.0 * Rnnoise::FRAME as f64 / f64::from(Rnnoise::RATE);
    crossfade_ms + SOLA_SEARCH_MS + f64::from(denoise_passes) * frame_ms
}

/// Input to output: one block gathered, the engine's delay, one block of output prefill, and
/// what the devices report (negative reports count as zero).
pub fn estimate_latency_ms(
    block_ms: f64,
    engine_delay_ms: f64,
    input_latency_ms: f64,
    output_latency_ms: f64,
) -> f64 {
    block_ms + engine_delay_ms + block_ms + input_latency_ms.max(0.0) + output_latency_ms.max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_frames_rounds_to_10_ms_frames() {
        assert_eq!(block_frames(250.0, 48000), 12000);
        assert_eq!(block_frames(254.0, 44100), 25 * 441);
        assert_eq!(block_frames(3.0, 16000), 160);
    }

    #[test]
    fn estimate_matches_the_reference_formula() {
        // rvc-next defaults: block 250, crossfade 50 → 250 + 60 + 250 (+ devices).
        let engine = engine_delay_ms(50.0, 0);
        assert_eq!(engine, 60.0);
        assert_eq!(estimate_latency_ms(250.0, engine, 0.0, 0.0), 560.0);
        assert_eq!(estimate_latency_ms(250.0, engine, 12.5, -3.0), 572.5);
        assert_eq!(engine_delay_ms(50.0, 1), 70.0);
        assert_eq!(engine_delay_ms(20.0, 2), 50.0);
    }
}
