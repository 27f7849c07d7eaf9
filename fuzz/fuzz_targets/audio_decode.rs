//! The audio decoder's front end: any bytes as a WAV, FLAC, MP3 or OGG file (the first byte
//! picks the extension hint, as a file's name would) through `decode_bytes`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use timbre_audio::{DecodeOptions, decode_bytes};

const HINTS: [Option<&str>; 5] = [Some("wav"), Some("flac"), Some("mp3"), Some("ogg"), None];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let hint = HINTS[usize::from(pick) % HINTS.len()];
    // Import's limit, so a header that claims hours is refused rather than decoded.
    let options = DecodeOptions {
        max_duration_secs: Some(600.0),
    };
    let _ = decode_bytes(file.to_vec(), hint, &options);
});
