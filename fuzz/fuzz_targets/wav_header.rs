//! WAV headers: a well-formed RIFF/WAVE layout whose `fmt ` fields (format tag, channels, rate,
//! byte rate, block align, bits) and `data` size come from the input, followed by the rest of
//! the input as samples, so the fuzzer spends its time on header values rather than on finding
//! the RIFF layout.
#![no_main]

use libfuzzer_sys::fuzz_target;
use timbre_audio::{DecodeOptions, decode_bytes};

const FIELDS: usize = 2 + 2 + 4 + 4 + 2 + 2 + 4;

fuzz_target!(|data: &[u8]| {
    if data.len() < FIELDS {
        return;
    }
    let (fields, samples) = data.split_at(FIELDS);
    let (fmt, data_size) = fields.split_at(16);
    let mut wav = Vec::with_capacity(44 + samples.len());
    wav.extend(b"RIFF");
    wav.extend((36 + samples.len() as u32).to_le_bytes());
    wav.extend(b"WAVEfmt ");
    wav.extend(16u32.to_le_bytes());
    wav.extend(fmt);
    wav.extend(b"data");
    wav.extend(data_size);
    wav.extend(samples);
    let options = DecodeOptions {
        max_duration_secs: Some(600.0),
    };
    let _ = decode_bytes(wav, Some("wav"), &options);
});
