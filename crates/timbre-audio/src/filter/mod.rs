//! The DSP numerics of the RVC reference pipeline (RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/modules/vc/pipeline.py`): its input high-pass, its RMS mix and its f0 median filter.

mod iir;
mod lfilter;
mod median;
mod rms;

pub use iir::{
    RVC_HIGHPASS_CUTOFF_HZ, RVC_HIGHPASS_ORDER, RVC_SAMPLE_RATE, butter_highpass, butter_lowpass,
    filtfilt, lfilter_zi, rvc_highpass, rvc_highpass_in_place,
};
pub use lfilter::lfilter;
pub use median::median_filter;
pub use rms::{
    change_rms, envelope, envelope_hop, frame_rms, frame_value, interpolate_at, interpolate_linear,
    mix_sample,
};
