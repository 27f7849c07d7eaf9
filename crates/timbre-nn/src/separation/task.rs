//! What a separation model does with a voice, told by the stems its config names, as UVR's and
//! MSST's checkpoints name them: `vocals` from a mix, the lead vocal (`karaoke`) from a vocal stem,
//! the voice without its reverb (`noreverb`, `dry`).

use serde::Serialize;

/// The voice a separation model outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum VoiceTask {
    /// A `vocals` stem: the vocals of a mix.
    Vocals,
    /// A `karaoke` stem: the lead vocal of a vocal stem.
    LeadVocal,
    /// A `noreverb` or `dry` stem: the voice without its reverb.
    DeReverb,
}

impl VoiceTask {
    /// The task of a model with `stems` and where its voice is among them; None when no stem
    /// holds a voice (an instrumental-only model, say).
    pub fn of_stems(stems: &[String]) -> Option<(VoiceTask, usize)> {
        let find = |names: &[&str]| {
            stems
                .iter()
                .position(|s| names.iter().any(|n| s.eq_ignore_ascii_case(n)))
        };
        [
            (VoiceTask::Vocals, &["vocals"][..]),
            (VoiceTask::LeadVocal, &["karaoke"][..]),
            (VoiceTask::DeReverb, &["noreverb", "dry"][..]),
        ]
        .into_iter()
        .find_map(|(task, names)| find(names).map(|index| (task, index)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_voice_stem_tells_the_task() {
        assert_eq!(
            VoiceTask::of_stems(&stems(&["other", "Vocals"])),
            Some((VoiceTask::Vocals, 1))
        );
        assert_eq!(
            VoiceTask::of_stems(&stems(&["karaoke", "other"])),
            Some((VoiceTask::LeadVocal, 0))
        );
        assert_eq!(
            VoiceTask::of_stems(&stems(&["reverb", "noreverb"])),
            Some((VoiceTask::DeReverb, 1))
        );
        assert_eq!(VoiceTask::of_stems(&stems(&["instrumental"])), None);
    }
}
