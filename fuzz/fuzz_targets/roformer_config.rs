//! The RoFormer YAML config reader, and the kind detection `timbre models files` uses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use timbre_nn::separation::config::{Config, kind_of_config};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = Config::from_yaml(text) {
        let _ = config.stems();
        let _ = config.audio_channels();
    }
    let _ = kind_of_config(text);
});
