//! The training pieces of RVC's `infer/modules/train/preprocess.py` (`PreProcess.pipeline` and
//! `norm_write`): each slice cut into overlapping pieces, each piece peak-normalised.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// Piece length, in seconds (`per`, RVC's default 3.7).
pub const RVC_PIECE_SECONDS: f64 = 3.7;
/// Overlap between consecutive pieces, in seconds.
pub const RVC_PIECE_OVERLAP: f64 = 0.3;
/// Pieces whose peak exceeds this are dropped ("filtered") rather than normalised.
pub const RVC_MAX_PIECE_PEAK: f64 = 2.5;
/// Peak the normalised part of a piece is brought to.
const NORM_PEAK: f64 = 0.9;
/// Share of the normalised piece in the mix with the original (`alpha`).
const NORM_ALPHA: f64 = 0.75;

/// The pieces of `slice` (a range of the audio, at `sample_rate`), as ranges of the same audio,
/// by the reference's loop: piece `i` starts at `int(sr · (per − overlap) · i)` and is
/// `int(per · sr)` long while more than `(per + overlap) · sr` samples remain from its start;
/// the first piece with no more than that left takes everything to the end of the slice.
///
/// So every slice gives at least one piece (an empty slice an empty one); after a full piece the
/// last one is longer than `2 · overlap` and at most `per + overlap` seconds. Settings the loop could not finish
/// with (`per <= overlap`, not finite) give the whole slice as one piece.
pub fn pieces(slice: Range<usize>, sample_rate: u32, per: f64, overlap: f64) -> Vec<Range<usize>> {
    let sr = f64::from(sample_rate);
    let len = slice.end.saturating_sub(slice.start);
    let step = sr * (per - overlap);
    let tail = (per + overlap) * sr;
    if !(step.is_finite() && tail.is_finite() && step > 0.0) {
        return vec![slice];
    }
    let piece_len = (per * sr) as usize;
    let mut out = Vec::new();
    for i in 0.. {
        // Python's int() truncates; a start past the end leaves nothing, as slicing does.
        let start = ((step * f64::from(i)) as usize).min(len);
        if (len - start) as f64 > tail {
            out.push(slice.start + start..slice.start + (start + piece_len).min(len));
        } else {
            out.push(slice.start + start..slice.start + len);
            break;
        }
    }
    out
}

/// Why a piece was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Rejected {
    /// Its peak exceeds [`RVC_MAX_PIECE_PEAK`] (the reference prints "filtered").
    TooLoud {
        /// Largest absolute sample of the piece, linear (non-finite samples ignored).
        peak: f64,
    },
    /// Empty or all zeros: the reference would divide by a zero peak (and write NaNs, or fail the
    /// file for an empty piece); we drop it.
    Silent,
}

/// `norm_write`'s normalisation: with `peak = max |x|`, `x / peak · (0.9 · 0.75) + 0.25 · x`, in
/// f64 as the reference computes it, returned as the f32 it writes; pieces louder than
/// [`RVC_MAX_PIECE_PEAK`] are rejected. Non-finite samples count as silence.
pub fn normalize_piece(piece: &[f64]) -> Result<Vec<f32>, Rejected> {
    let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
    let peak = piece.iter().fold(0.0f64, |m, &x| m.max(finite(x).abs()));
    if peak > RVC_MAX_PIECE_PEAK {
        return Err(Rejected::TooLoud { peak });
    }
    if peak == 0.0 {
        return Err(Rejected::Silent);
    }
    let gain = NORM_PEAK * NORM_ALPHA;
    let dry = 1.0 - NORM_ALPHA;
    Ok(piece
        .iter()
        .map(|&x| {
            let x = finite(x);
            (x / peak * gain + dry * x) as f32
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(ranges: &[Range<usize>]) -> Vec<usize> {
        ranges.iter().map(|r| r.end - r.start).collect()
    }

    #[test]
    fn reference_loop_and_tail_rule() {
        // 40 kHz: pieces of 148000 samples every 136000 while more than 160000 remain.
        let sr = 40_000;
        let p = |len: usize| pieces(1000..1000 + len, sr, RVC_PIECE_SECONDS, RVC_PIECE_OVERLAP);
        assert_eq!(p(0), vec![1000..1000]);
        assert_eq!(p(50_000), vec![1000..51_000]);
        // Exactly 4 s is not more than the tail: one piece.
        assert_eq!(p(160_000), vec![1000..161_000]);
        assert_eq!(p(160_001), vec![1000..149_000, 137_000..161_001]);
        assert_eq!(lengths(&p(400_000)), vec![148_000, 148_000, 128_000]);
        assert_eq!(p(400_000)[2], 273_000..401_000);
        for len in [160_001, 296_000, 296_001, 1_000_000] {
            let all = p(len);
            assert_eq!(all.last().unwrap().end, 1000 + len);
            let last = lengths(&all).pop().unwrap();
            assert!((24_001..=160_000).contains(&last), "{len}: {last}");
        }
        assert_eq!(pieces(0..10, sr, 0.3, 0.3), vec![0..10]);
        assert_eq!(pieces(0..10, sr, f64::NAN, 0.3), vec![0..10]);
    }

    #[test]
    fn normalisation_and_skip_rule() {
        let out = normalize_piece(&[0.5, -0.25, 0.0]).unwrap();
        // 0.5 / 0.5 · 0.675 + 0.25 · 0.5 = 0.8; −0.25 / 0.5 · 0.675 − 0.0625 = −0.4.
        assert_eq!(out, vec![0.8, -0.4, 0.0]);
        let loud = normalize_piece(&[2.0, -2.6]).unwrap_err();
        assert_eq!(loud, Rejected::TooLoud { peak: 2.6 });
        // At most 2.5 is still normalised: peak 2.5 → 0.675 + 0.625.
        assert_eq!(normalize_piece(&[2.5]).unwrap(), vec![1.3]);
        assert_eq!(normalize_piece(&[]), Err(Rejected::Silent));
        assert_eq!(normalize_piece(&[0.0, f64::NAN]), Err(Rejected::Silent));
    }
}
