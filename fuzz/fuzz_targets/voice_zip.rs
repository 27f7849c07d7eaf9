//! Community voice archives through `VoiceZip` (timbre_core::voice_import::archive): the listing
//! with its bomb, path, link and encryption checks, then every voice entry streamed out under
//! the caps, as an import unpacks them.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use timbre_core::voice_import::archive::VoiceZip;

fuzz_target!(|data: &[u8]| {
    let Ok(mut zip) = VoiceZip::open(Cursor::new(data), "fuzz.zip") else {
        return;
    };
    let members = zip.members().to_vec();
    for member in &members {
        let _ = zip.copy_member(member, &mut std::io::sink());
    }
});
