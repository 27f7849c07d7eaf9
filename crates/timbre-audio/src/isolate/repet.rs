//! REPET-SIM (Rafii and Pardo, "Music/voice separation using the similarity matrix", ISMIR
//! 2012): what repeats is accompaniment. For each frame, the frames most like it (by cosine
//! similarity of their magnitude spectra) are found; their element-wise median is the repeating
//! model, and the model's share of the frame, capped at 1, is a soft mask for the accompaniment.

/// Magnitude bins are summed into this many bands for the similarity, which is all it needs.
const FEATURE_BANDS: usize = 96;
/// Most similar frames that make a frame's repeating model.
const MAX_SIMILAR: usize = 12;
/// Similar frames must lie this far from the frame and from each other (about a beat), so one
/// sustained sound is not mistaken for repetition.
pub(super) const MIN_GAP_SECS: f64 = 0.4;
/// Frames less similar than this are never used.
const MIN_SIMILARITY: f32 = 0.0;

/// Unit-length band magnitudes of one frame, for cosine similarity by dot product.
pub(super) fn feature(magnitudes: &[f32]) -> Vec<f32> {
    let per_band = magnitudes.len().div_ceil(FEATURE_BANDS);
    let mut bands: Vec<f32> = magnitudes
        .chunks(per_band)
        .map(|band| band.iter().sum())
        .collect();
    let norm = bands.iter().map(|b| b * b).sum::<f32>().sqrt();
    if norm > 0.0 {
        bands.iter_mut().for_each(|b| *b /= norm);
    }
    bands
}

/// Indices of the frames of `features` most similar to frame `frame`, at least `min_gap` frames
/// from it and from each other.
pub(super) fn similar_frames(features: &[Vec<f32>], frame: usize, min_gap: usize) -> Vec<usize> {
    let own = &features[frame];
    let mut candidates: Vec<(f32, usize)> = features
        .iter()
        .enumerate()
        .filter(|(j, _)| j.abs_diff(frame) >= min_gap)
        .map(|(j, other)| (own.iter().zip(other).map(|(a, b)| a * b).sum(), j))
        .filter(|&(similarity, _)| similarity > MIN_SIMILARITY)
        .collect();
    candidates.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let mut picked: Vec<usize> = Vec::with_capacity(MAX_SIMILAR);
    for (_, j) in candidates {
        if picked.iter().all(|&p| p.abs_diff(j) >= min_gap) {
            picked.push(j);
            if picked.len() == MAX_SIMILAR {
                break;
            }
        }
    }
    picked
}

/// For each bin of `frame`, the repeating model's share of it: the median over `similar` of the
/// magnitudes, over the frame's own magnitude, at most 1. A frame with nothing similar is all
/// foreground (0); a silent bin is all background (1).
pub(super) fn background_share(
    magnitudes: &[Vec<f32>],
    frame: usize,
    similar: &[usize],
    out: &mut [f32],
) {
    let mut values = Vec::with_capacity(similar.len());
    for (bin, share) in out.iter_mut().enumerate() {
        let own = magnitudes[frame][bin];
        if own <= f32::EPSILON {
            *share = 1.0;
            continue;
        }
        if similar.is_empty() {
            *share = 0.0;
            continue;
        }
        values.clear();
        values.extend(similar.iter().map(|&j| magnitudes[j][bin]));
        let middle = values.len() / 2;
        let (_, median, _) = values.select_nth_unstable_by(middle, f32::total_cmp);
        *share = (*median / own).min(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_frames_are_found_and_their_median_is_the_model() {
        // Frames 0, 3, 6, 9 repeat one pattern; the others are another; frame 9 adds a "voice"
        // on bin 1.
        let pattern = |t: usize| -> Vec<f32> {
            let mut m = if t.is_multiple_of(3) {
                vec![1.0, 0.0, 1.0, 0.5]
            } else {
                vec![0.0, 1.0, 0.0, 0.2]
            };
            if t == 9 {
                m[1] = 0.5;
            }
            m
        };
        let magnitudes: Vec<Vec<f32>> = (0..12).map(pattern).collect();
        let features: Vec<Vec<f32>> = magnitudes.iter().map(|m| feature(m)).collect();
        let similar = similar_frames(&features, 9, 2);
        let mut most_similar = similar[..3].to_vec();
        most_similar.sort();
        assert_eq!(most_similar, vec![0, 3, 6]);
        assert!(similar.iter().all(|&j| j.abs_diff(9) >= 2));
        let mut share = vec![0.0; 4];
        background_share(&magnitudes, 9, &[0, 3, 6], &mut share);
        assert_eq!(share, vec![1.0, 0.0, 1.0, 1.0]);
        background_share(&magnitudes, 9, &[], &mut share);
        assert_eq!(share, vec![0.0, 0.0, 0.0, 0.0]);
    }
}
