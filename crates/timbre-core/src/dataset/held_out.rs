//! The held-out set: pieces of a dataset kept out of training so that the checkpoint judge
//! (`train::judge`) can score each checkpoint on speech the model never learnt from.
//!
//! Which pieces: neighbouring pieces of one input share 0.3 s of audio (the slicer's overlap)
//! and the same recording, so pieces picked here and there would let the model learn part of
//! what it is judged on. With three inputs or more, whole inputs are held out, the last ones
//! first (a recording the model never heard, nothing shared at all); with fewer, or inputs too
//! long for the share, the end of the longest input is: one run of consecutive pieces with a
//! single boundary, where the first held-out piece shares 0.3 s with the last trained one
//! (under 2 % of a 20 s set).
//!
//! How much: 5 % of the audio and at least 20 s, at most a quarter of it, and never taking the
//! training audio under [`MIN_TRAINING_SECONDS`]; a dataset too small to spare 5 s keeps none
//! (the judge then says so).

use timbre_audio::dataset::HeldOutReport;

use crate::dataset_layout::{MIN_TRAINING_SECONDS, ManifestPiece};

/// The share of a dataset held out, when that is over [`LEAST_SECONDS`].
const SHARE: f64 = 0.05;
/// The held-out audio aimed at in a small dataset, in seconds.
const LEAST_SECONDS: f64 = 20.0;
/// The most of a dataset ever held out.
const MOST_SHARE: f64 = 0.25;
/// Less than this is not worth judging on: nothing is held out.
const SMALLEST_SECONDS: f64 = 5.0;
/// Inputs needed before whole inputs are held out.
const WHOLE_SOURCES_FROM: usize = 3;

/// The pieces split into those trained on and those held out, and the report of the latter.
/// `sliced_seconds` is the slicer's kept audio, each second once (the training minimum is
/// counted so: `Manifest::audio_seconds`).
pub fn split(
    pieces: Vec<ManifestPiece>,
    sliced_seconds: f64,
) -> (Vec<ManifestPiece>, Vec<ManifestPiece>, HeldOutReport) {
    let total = sliced_seconds.min(pieces.iter().map(|p| p.seconds).sum());
    let most = (MOST_SHARE * total).min(total - MIN_TRAINING_SECONDS);
    let aim = (SHARE * total).max(LEAST_SECONDS).min(most);
    if aim < SMALLEST_SECONDS {
        return (pieces, Vec::new(), HeldOutReport::default());
    }
    let sources = sources_in_order(&pieces);
    let whole = (sources.len() >= WHOLE_SOURCES_FROM)
        .then(|| whole_sources(&pieces, &sources, aim, most))
        .flatten();
    let held: Vec<bool> = match &whole {
        Some(chosen) => pieces.iter().map(|p| chosen.contains(&p.source)).collect(),
        None => end_of_longest(&pieces, &sources, aim, most),
    };
    let (mut kept, mut held_out) = (Vec::new(), Vec::new());
    for (piece, held) in pieces.into_iter().zip(held) {
        if held {
            held_out.push(piece)
        } else {
            kept.push(piece)
        }
    }
    let mut report = HeldOutReport {
        pieces: held_out.len(),
        seconds: held_out.iter().map(|p| p.seconds).sum(),
        sources: sources_in_order(&held_out),
        whole_sources: whole.is_some(),
    };
    if report.seconds < SMALLEST_SECONDS {
        kept.append(&mut held_out);
        report = HeldOutReport::default();
    }
    (kept, held_out, report)
}

fn sources_in_order(pieces: &[ManifestPiece]) -> Vec<String> {
    let mut sources: Vec<String> = Vec::new();
    for piece in pieces {
        if !sources.contains(&piece.source) {
            sources.push(piece.source.clone());
        }
    }
    sources
}

fn seconds_of(pieces: &[ManifestPiece], source: &str) -> f64 {
    pieces
        .iter()
        .filter(|p| p.source == source)
        .map(|p| p.seconds)
        .sum()
}

/// Whole inputs from the last one back, each taken if it fits under `most`, until `aim` is
/// reached; None when they reach under half of it (inputs too long for the share).
fn whole_sources(
    pieces: &[ManifestPiece],
    sources: &[String],
    aim: f64,
    most: f64,
) -> Option<Vec<String>> {
    let (mut chosen, mut seconds) = (Vec::new(), 0.0);
    // The first input always trains: a dataset is never all held out.
    for source in sources.iter().skip(1).rev() {
        if seconds >= aim {
            break;
        }
        let length = seconds_of(pieces, source);
        if seconds + length <= most {
            chosen.push(source.clone());
            seconds += length;
        }
    }
    (seconds >= aim / 2.0).then_some(chosen)
}

/// The last pieces of the longest input, while under `most`, until `aim` is reached.
fn end_of_longest(pieces: &[ManifestPiece], sources: &[String], aim: f64, most: f64) -> Vec<bool> {
    let mut held = vec![false; pieces.len()];
    let Some(longest) = sources
        .iter()
        .max_by(|a, b| seconds_of(pieces, a).total_cmp(&seconds_of(pieces, b)))
    else {
        return held;
    };
    let mut seconds = 0.0;
    for (i, piece) in pieces.iter().enumerate().rev() {
        if seconds >= aim {
            break;
        }
        if piece.source != *longest {
            continue;
        }
        if seconds + piece.seconds > most {
            break;
        }
        held[i] = true;
        seconds += piece.seconds;
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(source: &str, index: usize, seconds: f64) -> ManifestPiece {
        ManifestPiece {
            gt_wav: format!("gt_wavs/{source}-{index}.wav"),
            wav_16k: String::new(),
            features: String::new(),
            source: source.into(),
            index,
            seconds,
            feature_frames: 0,
            f0_frames: None,
        }
    }

    /// `split` of pieces that do not overlap.
    fn split_all(
        pieces: Vec<ManifestPiece>,
    ) -> (Vec<ManifestPiece>, Vec<ManifestPiece>, HeldOutReport) {
        let seconds = pieces.iter().map(|p| p.seconds).sum();
        split(pieces, seconds)
    }

    fn take(source: &str, pieces: usize) -> Vec<ManifestPiece> {
        (0..pieces).map(|i| piece(source, i, 3.7)).collect()
    }

    #[test]
    fn one_long_input_gives_the_run_of_pieces_at_its_end() {
        // 100 pieces, 370 s: 5 % is 18.5 s, so 20 s are aimed at: six pieces, 22.2 s.
        let (kept, held, report) = split_all(take("a.wav", 100));
        assert_eq!(held.len(), 6);
        assert_eq!(kept.len(), 94);
        assert!(held.iter().all(|p| p.index >= 94), "{held:?}");
        assert!(!report.whole_sources);
        assert_eq!(report.sources, ["a.wav"]);
        assert!((report.seconds - 22.2).abs() < 1e-9);
    }

    #[test]
    fn several_inputs_give_whole_inputs_from_the_last() {
        let mut pieces = take("a.wav", 60);
        pieces.extend(take("b.wav", 40));
        pieces.extend(take("c.wav", 4));
        pieces.extend(take("d.wav", 3));
        let (kept, held, report) = split_all(pieces);
        // 396 s: 20 s aimed at; d (11.1 s) then c (14.8 s) reach it.
        assert!(report.whole_sources);
        assert_eq!(report.sources, ["c.wav", "d.wav"]);
        assert_eq!(held.len(), 7);
        assert!(
            kept.iter()
                .all(|p| p.source == "a.wav" || p.source == "b.wav")
        );
    }

    #[test]
    fn inputs_too_long_for_the_share_fall_back_to_the_end_of_the_longest() {
        let mut pieces = take("a.wav", 50);
        pieces.extend(take("b.wav", 60));
        pieces.extend(take("c.wav", 50));
        let (_, held, report) = split_all(pieces);
        assert!(!report.whole_sources);
        // 592 s: 29.6 s aimed at, the last eight or nine pieces of b (float rounding).
        assert!((8..=9).contains(&held.len()), "{held:?}");
        let first = 60 - held.len();
        assert!(
            held.iter().all(|p| p.source == "b.wav" && p.index >= first),
            "{held:?}"
        );
    }

    #[test]
    fn the_training_audio_never_goes_under_the_minimum_and_tiny_sets_hold_out_nothing() {
        // 74 s: at most 14 s may go (74 - 60), so three pieces (11.1 s).
        let (kept, held, _) = split_all(take("a.wav", 20));
        assert_eq!(held.len(), 3);
        assert!(kept.iter().map(|p| p.seconds).sum::<f64>() >= MIN_TRAINING_SECONDS);
        // Counted once, as the slicer kept it (the pieces overlap): 64 s leave 4 s to spare.
        let (_, held, _) = split(take("a.wav", 20), 64.0);
        assert!(held.is_empty());
        // 62.9 s: 2.9 s could go, under the 5 s worth judging.
        let (kept, held, report) = split_all(take("a.wav", 17));
        assert!(held.is_empty());
        assert_eq!(kept.len(), 17);
        assert_eq!(report, HeldOutReport::default());
    }

    #[test]
    fn the_first_input_always_trains() {
        let mut pieces = take("a.wav", 2);
        pieces.extend(take("b.wav", 30));
        pieces.extend(take("c.wav", 30));
        let (kept, _, _) = split_all(pieces);
        assert!(kept.iter().any(|p| p.source == "a.wav"));
    }
}
