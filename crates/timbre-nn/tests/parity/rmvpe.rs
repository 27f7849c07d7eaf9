//! `rmvpe` cases: our log-mel, salience (from the reference's mel and from ours) and f0 of
//! `audio_16k` against the reference's.

use anyhow::{Context, Result};
use serde_json::Value as Json;
use tch::{Kind, Tensor};
use timbre_nn::rmvpe::{DEFAULT_THRESHOLD, Rmvpe, decode};

use super::Case;
use super::compare::max_abs;

/// Frames within this much of the threshold may fall either side of it.
const VOICING_MARGIN: f64 = 1e-3;

pub fn check(case: &Case, _manifest: &Json) -> Result<String> {
    let model_path = case.path("model")?;
    let model = Rmvpe::load(&model_path, super::device())?;
    let io = case.io()?;
    let audio = io.get("audio_16k")?.to_device(super::device());
    let (mel_tol, salience_tol, cents_tol) = (
        case.tolerance("mel_max_abs")?,
        case.tolerance("salience_max_abs")?,
        case.tolerance("f0_max_abs_cents")?,
    );
    let threshold = case.json["threshold"]
        .as_f64()
        .map_or(DEFAULT_THRESHOLD, |t| t as f32);

    let mel = model.mel(&audio)?;
    let reference_mel = io.get("mel")?.to_device(super::device());
    let mel_err = max_abs(&mel, &reference_mel).context("mel")?;
    anyhow::ensure!(
        mel_err <= mel_tol,
        "mel max_abs {mel_err:.3e} > {mel_tol:e}"
    );

    let reference_salience = io.get("salience")?;
    let from_their_mel =
        max_abs(&model.salience(&reference_mel)?, &reference_salience).context("salience")?;
    let ours = model.salience(&mel)?;
    let from_our_mel = max_abs(&ours, &reference_salience).context("salience from our mel")?;
    anyhow::ensure!(
        from_their_mel <= salience_tol && from_our_mel <= salience_tol,
        "salience max_abs {from_their_mel:.3e} from the reference mel, {from_our_mel:.3e} from ours > {salience_tol:e}"
    );

    let reference_f0 = io.get("f0")?.to_kind(Kind::Double);
    let f0 = super::compare::on_cpu(&model.f0(&audio, threshold)?);
    let (f0_err, voiced, borderline_flips) =
        compare_f0(&f0, &reference_f0, &reference_salience, threshold)?;
    let decoded = decode(&reference_salience, threshold).to_kind(Kind::Double);
    let (decode_err, _, _) = compare_f0(&decoded, &reference_f0, &reference_salience, threshold)
        .context("decoding the reference salience")?;
    anyhow::ensure!(
        f0_err <= cents_tol && decode_err <= cents_tol,
        "f0 max_abs {f0_err:.3} cents, {decode_err:.3} decoding the reference salience > {cents_tol}"
    );

    Ok(format!(
        "mel max_abs {mel_err:.2e} (tol {mel_tol:e}); salience max_abs {from_their_mel:.2e} from the reference mel, \
         {from_our_mel:.2e} from ours (tol {salience_tol:e}); f0 max_abs {f0_err:.2e} cents ({decode_err:.2e} decoding the \
         reference salience) over {voiced} voiced of {} frames (tol {cents_tol}), voicing differs at {borderline_flips} \
         frame(s) within {VOICING_MARGIN:e} of the threshold",
        f0.size()[0]
    ))
}

/// The largest pitch difference in cents over frames both call voiced, the number of such
/// frames and of frames whose voicing differs (an error unless the reference's peak salience
/// is within [`VOICING_MARGIN`] of the threshold).
fn compare_f0(
    f0: &Tensor,
    reference_f0: &Tensor,
    reference_salience: &Tensor,
    threshold: f32,
) -> Result<(f64, i64, i64)> {
    anyhow::ensure!(
        f0.size() == reference_f0.size(),
        "f0 shape {:?}, reference {:?}",
        f0.size(),
        reference_f0.size()
    );
    let (ours_voiced, their_voiced) = (f0.gt(0.0), reference_f0.gt(0.0));
    let peak = reference_salience.to_kind(Kind::Double).amax([1], false);
    let borderline = (peak - f64::from(threshold)).abs().lt(VOICING_MARGIN);
    let flips = ours_voiced.not_equal_tensor(&their_voiced);
    let count = |mask: &Tensor| mask.sum(Kind::Int64).int64_value(&[]);
    let wrong = count(&flips.logical_and(&borderline.logical_not()));
    anyhow::ensure!(
        wrong == 0,
        "voicing differs from the reference at {wrong} frame(s) not near the threshold"
    );
    let both = ours_voiced.logical_and(&their_voiced);
    let voiced = count(&both);
    let cents = if voiced > 0 {
        let ratio = f0.masked_select(&both) / reference_f0.masked_select(&both);
        (ratio.log2() * 1200.0).abs().max().double_value(&[])
    } else {
        0.0
    };
    Ok((cents, voiced, count(&flips)))
}
