//! Opus, which symphonia demuxes from Ogg (with the pre-skip and end trim) but does not decode:
//! libopus, through the `opus` crate, behind symphonia's decoder trait, so Opus files take the
//! same decode paths, checks and block reading as every other format.

use std::sync::{LazyLock, Mutex};

use symphonia::core::audio::{
    AsGenericAudioBufferRef, AudioBuffer, AudioMut, AudioSpec, GenericAudioBufferRef,
};
use symphonia::core::codecs::CodecInfo;
use symphonia::core::codecs::audio::well_known::CODEC_ID_OPUS;
use symphonia::core::codecs::audio::{
    AudioCodecParameters, AudioDecoder, AudioDecoderOptions, FinalizeResult,
};
use symphonia::core::codecs::registry::{
    CodecRegistry, RegisterableAudioDecoder, SupportedAudioCodec,
};
use symphonia::core::errors::{Result, decode_error, unsupported_error};
use symphonia::core::packet::PacketRef;

/// Opus always decodes at 48 kHz, whatever rate the encoder was given.
const RATE: u32 = 48_000;
/// The longest Opus packet: 120 ms at 48 kHz.
const MAX_FRAMES: usize = 5_760;

/// symphonia's codecs and this Opus decoder.
pub(super) fn codecs() -> &'static CodecRegistry {
    static REGISTRY: LazyLock<CodecRegistry> = LazyLock::new(|| {
        let mut registry = CodecRegistry::new();
        symphonia::default::register_enabled_codecs(&mut registry);
        registry.register_audio_decoder::<OpusDecoder>();
        registry
    });
    &REGISTRY
}

struct OpusDecoder {
    params: AudioCodecParameters,
    /// Behind a lock only because symphonia wants decoders `Sync` and libopus's are `Send`.
    decoder: Mutex<opus::Decoder>,
    channels: usize,
    interleaved: Vec<f32>,
    buf: AudioBuffer<f32>,
    /// The encoder's lookahead still to drop: symphonia states the OpusHead's pre-skip as the
    /// track's delay but leaves it in the packets.
    pre_skip: usize,
}

impl OpusDecoder {
    fn try_new(params: &AudioCodecParameters) -> Result<Self> {
        let Some(layout) = params.channels.clone() else {
            return unsupported_error("opus: the stream states no channels");
        };
        let channels = layout.count();
        let mode = match channels {
            1 => opus::Channels::Mono,
            2 => opus::Channels::Stereo,
            _ => return unsupported_error("opus: only mono and stereo streams are supported"),
        };
        let Ok(decoder) = opus::Decoder::new(RATE, mode) else {
            return unsupported_error("opus: libopus could not start a decoder");
        };
        Ok(OpusDecoder {
            params: params.clone(),
            decoder: Mutex::new(decoder),
            channels,
            interleaved: vec![0.0; MAX_FRAMES * channels],
            buf: AudioBuffer::new(AudioSpec::new(RATE, layout), MAX_FRAMES),
            pre_skip: params.extra_data.as_deref().map_or(0, pre_skip),
        })
    }

    fn decode_inner(&mut self, packet: &PacketRef<'_>) -> Result<()> {
        let mut decoder = self.decoder.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(frames) = decoder.decode_float(packet.data, &mut self.interleaved, false) else {
            return decode_error("opus: a damaged packet");
        };
        self.buf.clear();
        self.buf.render_uninit(Some(frames));
        for channel in 0..self.channels {
            let plane = self.buf.plane_mut(channel).expect("the layout's channels");
            for (i, sample) in plane.iter_mut().enumerate() {
                *sample = self.interleaved[i * self.channels + channel];
            }
        }
        let trim_start = packet.trim_start.get() as usize;
        // Were symphonia to drop the delay itself, it would mark it here.
        let skip = if trim_start > 0 {
            self.pre_skip = 0;
            trim_start
        } else {
            let skip = self.pre_skip.min(frames);
            self.pre_skip -= skip;
            skip
        };
        self.buf.trim(skip, packet.trim_end.get() as usize);
        Ok(())
    }
}

/// The pre-skip of an `OpusHead` packet (RFC 7845 §5.1), in 48 kHz samples.
fn pre_skip(head: &[u8]) -> usize {
    match head {
        [
            b'O',
            b'p',
            b'u',
            b's',
            b'H',
            b'e',
            b'a',
            b'd',
            _,
            _,
            low,
            high,
            ..,
        ] => usize::from(u16::from_le_bytes([*low, *high])),
        _ => 0,
    }
}

impl AudioDecoder for OpusDecoder {
    fn reset(&mut self) {
        // A reset only fails on a decoder libopus never made.
        let decoder = self.decoder.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = decoder.reset_state();
        self.pre_skip = 0;
    }

    fn codec_info(&self) -> &CodecInfo {
        &Self::supported_codecs()[0].info
    }

    fn codec_params(&self) -> &AudioCodecParameters {
        &self.params
    }

    fn decode_ref(&mut self, packet: &PacketRef<'_>) -> Result<GenericAudioBufferRef<'_>> {
        if let Err(e) = self.decode_inner(packet) {
            self.buf.clear();
            return Err(e);
        }
        Ok(self.buf.as_generic_audio_buffer_ref())
    }

    fn finalize(&mut self) -> FinalizeResult {
        FinalizeResult::default()
    }

    fn last_decoded(&self) -> GenericAudioBufferRef<'_> {
        self.buf.as_generic_audio_buffer_ref()
    }
}

impl RegisterableAudioDecoder for OpusDecoder {
    fn try_registry_new(
        params: &AudioCodecParameters,
        _opts: &AudioDecoderOptions,
    ) -> Result<Box<dyn AudioDecoder>> {
        Ok(Box::new(OpusDecoder::try_new(params)?))
    }

    fn supported_codecs() -> &'static [SupportedAudioCodec] {
        &[SupportedAudioCodec {
            id: CODEC_ID_OPUS,
            info: CodecInfo {
                short_name: "opus",
                long_name: "Opus (libopus)",
                profiles: &[],
            },
        }]
    }
}
