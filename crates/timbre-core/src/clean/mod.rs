//! Cleaning audio: the `enhance` job (speech enhancement) and the `isolate` job (vocals and
//! instrumental from a mix). The input is a take or a file; the results are new takes linked to
//! their source (saved through `derived`). The source is never modified, and everything a job adds
//! (a file input's own take included) commits in one transaction at the end, so a failed or
//! cancelled job leaves nothing half-saved.

pub mod enhance;
pub mod isolate;
pub mod preview;
mod request;
mod streamed;
#[cfg(test)]
mod tests;

pub use enhance::{EnhanceHandler, EnhanceParams, EnhanceResult};
pub use isolate::{IsolateHandler, IsolateParams, IsolateResult};
pub use preview::{Preview, PreviewInfo, PreviewRequest, preview};
pub use request::{CleanRequest, PREVIEW_SECS_RANGE, check_enhance_options, submit};

use crate::output_format::OutputFormat;

/// Results are written as 32-bit float WAV unless asked otherwise: they are material for further
/// work, and an instrumental can exceed full scale.
pub(crate) fn default_format() -> OutputFormat {
    OutputFormat::WavFloat
}
