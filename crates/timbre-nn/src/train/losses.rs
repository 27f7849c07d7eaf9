//! RVC's GAN, feature-matching and KL losses: rvc_next 0.2.16 `engine/train/losses.py`
//! (unchanged from the original WebUI's `train/losses.py`), in its order of operations, every
//! input taken as fp32 as the reference's `.float()` does.

use tch::{Kind, Tensor};

/// Twice the summed mean absolute difference between the real and the generated feature maps
/// of every sub-discriminator (`feature_loss`); the real ones are detached.
pub fn feature_loss(real_features: &[Vec<Tensor>], generated_features: &[Vec<Tensor>]) -> Tensor {
    let mut loss: Option<Tensor> = None;
    for (real_maps, generated_maps) in real_features.iter().zip(generated_features) {
        for (real, generated) in real_maps.iter().zip(generated_maps) {
            let real = real.to_kind(Kind::Float).detach();
            let term = (real - generated.to_kind(Kind::Float))
                .abs()
                .mean(Kind::Float);
            loss = Some(accumulate(loss, term));
        }
    }
    total(loss) * 2.0
}

/// `discriminator_loss`: the least-squares GAN loss of the discriminator.
pub struct DiscriminatorLoss {
    /// Σ over sub-discriminators of mean((1 − real)²) + mean(generated²).
    pub total: Tensor,
    /// Each sub-discriminator's real term, detached (the reference's `r_losses`, which it
    /// reads out as floats; left as tensors so reading them, a GPU sync, is the caller's call).
    pub real: Vec<Tensor>,
    /// Each sub-discriminator's generated term, detached (`g_losses`).
    pub generated: Vec<Tensor>,
}

/// The discriminator's loss (`discriminator_loss`) from each sub-discriminator's scores on the
/// real audio and on the generated audio, in the same order.
pub fn discriminator_loss(
    real_scores: &[Tensor],
    generated_scores: &[Tensor],
) -> DiscriminatorLoss {
    let mut loss: Option<Tensor> = None;
    let (mut real_losses, mut generated_losses) = (Vec::new(), Vec::new());
    for (real, generated) in real_scores.iter().zip(generated_scores) {
        let real_loss = (1f64 - real.to_kind(Kind::Float))
            .square()
            .mean(Kind::Float);
        let generated_loss = generated.to_kind(Kind::Float).square().mean(Kind::Float);
        real_losses.push(real_loss.detach());
        generated_losses.push(generated_loss.detach());
        loss = Some(accumulate(loss, real_loss + generated_loss));
    }
    DiscriminatorLoss {
        total: total(loss),
        real: real_losses,
        generated: generated_losses,
    }
}

/// The generator's least-squares GAN loss, Σ mean((1 − generated)²), and each
/// sub-discriminator's term (`generator_loss`).
pub fn generator_loss(generated_scores: &[Tensor]) -> (Tensor, Vec<Tensor>) {
    let mut loss: Option<Tensor> = None;
    let mut terms = Vec::with_capacity(generated_scores.len());
    for generated in generated_scores {
        let term = (1f64 - generated.to_kind(Kind::Float))
            .square()
            .mean(Kind::Float);
        loss = Some(accumulate(loss, term.shallow_clone()));
        terms.push(term);
    }
    (total(loss), terms)
}

/// The KL divergence between the posterior sample `z_p` (log-std `logs_q`) and the prior
/// `N(m_p, exp(logs_p)²)`, summed over the unmasked frames and divided by their count
/// (`kl_loss`). All `[batch, channels, frames]`, `z_mask` `[batch, 1, frames]`.
pub fn kl_loss(
    z_p: &Tensor,
    logs_q: &Tensor,
    m_p: &Tensor,
    logs_p: &Tensor,
    z_mask: &Tensor,
) -> Tensor {
    let frames = z_mask.sum(Kind::Float);
    kl_loss_over(z_p, logs_q, m_p, logs_p, z_mask, &frames)
}

/// [`kl_loss`] normalised by `frames` rather than the mask's own frames: a data-parallel rank's
/// share of the combined batch's loss.
pub fn kl_loss_over(
    z_p: &Tensor,
    logs_q: &Tensor,
    m_p: &Tensor,
    logs_p: &Tensor,
    z_mask: &Tensor,
    frames: &Tensor,
) -> Tensor {
    let float = |t: &Tensor| t.to_kind(Kind::Float);
    let (logs_p, z_mask) = (float(logs_p), float(z_mask));
    let kl = &logs_p - float(logs_q) - 0.5;
    let kl = kl + (float(z_p) - float(m_p)).square() * 0.5 * (&logs_p * -2.0).exp();
    (kl * &z_mask).sum(Kind::Float) / frames
}

/// The reference's `loss = 0; loss += term`: the first term itself, then sums in order.
fn accumulate(loss: Option<Tensor>, term: Tensor) -> Tensor {
    match loss {
        Some(loss) => loss + term,
        None => term,
    }
}

/// The accumulated loss, or the reference's untouched `0` when there were no terms.
fn total(loss: Option<Tensor>) -> Tensor {
    loss.unwrap_or_else(|| Tensor::from(0f32))
}
