//! The fp16 loss scaler: torch.amp.GradScaler's dynamic scaling (init 65536, ×2 after 2000
//! finite steps, ×0.5 and the step skipped on an inf or NaN gradient), with its `state_dict()`
//! layout, which rvc-next saves under `scaler` in `G_<step>.pth`. Disabled, it scales by one and
//! never skips, as torch's is when AMP is off. Enabled, it unscales and checks the gradients with
//! torch's multi-tensor kernel, and a fused optimizer takes the inf flag on the device as torch
//! passes it (`found_inf`), so a step never waits for the device until the scale's update.

use anyhow::{Result, bail};
use tch::{Device, Kind, Tensor};
use timbre_torch_ext::{amp_unscale_, foreach_norm};

use super::optimizer::{AdamW, AdamWKernel};
use crate::checkpoint::Value;

const INIT_SCALE: f64 = 65536.0;
const GROWTH_FACTOR: f64 = 2.0;
const BACKOFF_FACTOR: f64 = 0.5;
const GROWTH_INTERVAL: i64 = 2000;

/// torch.amp.GradScaler for fp16 training: the loss scale, its growth count and the inf flags.
pub struct GradScaler {
    enabled: bool,
    scale: f64,
    growth_tracker: i64,
    /// Each step's inf flag in the current iteration (float32 scalars on the device).
    found_inf: Vec<Tensor>,
}

impl GradScaler {
    /// A scaler at the initial scale 65536; `enabled` false for fp32 training.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            scale: INIT_SCALE,
            growth_tracker: 0,
            found_inf: Vec::new(),
        }
    }

    /// Whether it scales losses and skips steps on inf or NaN gradients (fp16 training).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The factor losses are multiplied by: 1 when disabled.
    pub fn scale(&self) -> f64 {
        if self.enabled { self.scale } else { 1.0 }
    }

    /// `loss` times the current scale (unchanged when disabled), for the backward pass.
    pub fn scale_loss(&self, loss: &Tensor) -> Tensor {
        if self.enabled {
            loss * self.scale
        } else {
            loss.shallow_clone()
        }
    }

    /// Unscales `grads` in place and steps `optimizer` with them unless one holds an inf or a
    /// NaN; returns the gradients' global L2 norm as a scalar on their device (infinite when
    /// the step was skipped).
    pub fn step(&mut self, optimizer: &mut AdamW, grads: &[Tensor]) -> Result<Tensor> {
        let defined: Vec<&Tensor> = grads.iter().filter(|g| g.defined()).collect();
        let Some(first) = defined.first() else {
            return Ok(Tensor::zeros([], (Kind::Float, Device::Cpu)));
        };
        let device = first.device();
        let groups = by_device_and_kind(&defined);
        let found_inf = Tensor::zeros([], (Kind::Float, device));
        tch::no_grad(|| -> Result<()> {
            if self.enabled {
                let inv_scale = Tensor::full([], 1.0 / self.scale, (Kind::Float, device));
                for group in &groups {
                    amp_unscale_(group, &found_inf, &inv_scale)?;
                }
            }
            Ok(())
        })?;
        // One multi-tensor kernel per group, and no read of the device.
        let mut norms = Vec::with_capacity(defined.len());
        for group in &groups {
            norms.extend(foreach_norm(group)?);
        }
        let norms: Vec<Tensor> = norms
            .iter()
            .map(|n| n.to_device(device).to_kind(Kind::Float))
            .collect();
        let norm = Tensor::stack(&norms, 0).square().sum(Kind::Double).sqrt();
        if !self.enabled {
            if !norm.double_value(&[]).is_finite() {
                bail!("the gradients are not finite (NaN or inf): training diverged");
            }
            optimizer.step(grads)?;
            return Ok(norm);
        }
        match optimizer.kernel() {
            AdamWKernel::Fused => optimizer.step_unless_inf(grads, Some(&found_inf))?,
            AdamWKernel::SingleTensor => {
                if found_inf.double_value(&[]) == 0.0 {
                    optimizer.step(grads)?;
                }
            }
        }
        let norm = norm.masked_fill(&found_inf.ne(0.0), f64::INFINITY);
        self.found_inf.push(found_inf);
        Ok(norm)
    }

    /// The end of an iteration: back off after a skipped step, grow after enough good ones.
    /// Reads the steps' inf flags from the device.
    pub fn update(&mut self) {
        let flags = std::mem::take(&mut self.found_inf);
        if !self.enabled {
            return;
        }
        let found_inf =
            !flags.is_empty() && Tensor::stack(&flags, 0).sum(Kind::Float).double_value(&[]) != 0.0;
        if found_inf {
            self.scale *= BACKOFF_FACTOR;
            self.growth_tracker = 0;
        } else {
            self.growth_tracker += 1;
            if self.growth_tracker == GROWTH_INTERVAL {
                self.scale *= GROWTH_FACTOR;
                self.growth_tracker = 0;
            }
        }
    }

    /// torch's `GradScaler.state_dict()`.
    pub fn state_dict(&self) -> Value {
        let text = |s: &str| Value::Str(s.to_string());
        Value::Dict(vec![
            (text("scale"), Value::Float(self.scale)),
            (text("growth_factor"), Value::Float(GROWTH_FACTOR)),
            (text("backoff_factor"), Value::Float(BACKOFF_FACTOR)),
            (text("growth_interval"), Value::Int(GROWTH_INTERVAL)),
            (text("_growth_tracker"), Value::Int(self.growth_tracker)),
        ])
    }

    /// Restores `scale` and `_growth_tracker` from a `state_dict()`; a missing or mistyped key
    /// leaves its value as it was.
    pub fn load_state_dict(&mut self, state: &Value) {
        if let Some(scale) = state.get("scale").and_then(Value::as_f64) {
            self.scale = scale;
        }
        if let Some(tracker) = state.get("_growth_tracker").and_then(Value::as_i64) {
            self.growth_tracker = tracker;
        }
    }
}

/// The gradients split as torch's multi-tensor kernels take them: one device and dtype a list.
fn by_device_and_kind<'a>(tensors: &[&'a Tensor]) -> Vec<Vec<&'a Tensor>> {
    let mut groups: Vec<((Device, Kind), Vec<&Tensor>)> = Vec::new();
    for &tensor in tensors {
        let key = (tensor.device(), tensor.kind());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(tensor),
            None => groups.push((key, vec![tensor])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::optimizer::AdamWConfig;
    use tch::Device;

    fn an_infinite_gradient_skips_the_step_and_halves_the_scale(kernel: AdamWKernel) {
        let param = Tensor::ones([3], (Kind::Float, Device::Cpu));
        let mut optimizer =
            AdamW::new(vec![param.shallow_clone()], AdamWConfig::default()).with_kernel(kernel);
        let mut scaler = GradScaler::new(true);
        let grad = Tensor::from_slice(&[1.0f32, f32::INFINITY, 0.0]);
        let norm = scaler.step(&mut optimizer, &[grad]).unwrap();
        assert!(norm.double_value(&[]).is_infinite());
        scaler.update();
        assert_eq!(scaler.scale(), INIT_SCALE / 2.0);
        assert_eq!(param, Tensor::ones([3], (Kind::Float, Device::Cpu)));

        let grad = Tensor::from_slice(&[3.0f32, 4.0, 0.0]) * scaler.scale();
        let norm = scaler
            .step(&mut optimizer, &[grad])
            .unwrap()
            .double_value(&[]);
        assert!(
            (norm - 5.0).abs() < 1e-9,
            "norm of the unscaled gradient: {norm}"
        );
        assert_ne!(param, Tensor::ones([3], (Kind::Float, Device::Cpu)));
        scaler.update();
        assert_eq!(
            (scaler.scale(), scaler.growth_tracker),
            (INIT_SCALE / 2.0, 1)
        );
        // The skipped step was not counted: one step in the state.
        let state = optimizer.state_dict();
        let step = state.get("state").unwrap().as_dict().unwrap()[0]
            .1
            .get("step")
            .unwrap();
        assert_eq!(step.as_tensor().unwrap().double_value(&[]), 1.0);
    }

    #[test]
    fn an_infinite_gradient_skips_the_single_tensor_step() {
        an_infinite_gradient_skips_the_step_and_halves_the_scale(AdamWKernel::SingleTensor);
    }

    #[test]
    fn an_infinite_gradient_skips_the_fused_step_on_the_device() {
        an_infinite_gradient_skips_the_step_and_halves_the_scale(AdamWKernel::Fused);
    }

    #[test]
    fn disabled_it_scales_by_one_and_refuses_a_diverged_gradient() {
        let param = Tensor::ones([1], (Kind::Float, Device::Cpu));
        let mut optimizer = AdamW::new(vec![param], AdamWConfig::default());
        let mut scaler = GradScaler::new(false);
        assert_eq!(scaler.scale(), 1.0);
        let err = scaler
            .step(&mut optimizer, &[Tensor::from_slice(&[f32::NAN])])
            .unwrap_err();
        assert!(err.to_string().contains("diverged"));
    }

    #[test]
    fn its_state_round_trips() {
        let mut scaler = GradScaler::new(true);
        scaler.found_inf = vec![Tensor::from(1.0f32)];
        scaler.update();
        scaler.update();
        let mut restored = GradScaler::new(true);
        restored.load_state_dict(&scaler.state_dict());
        assert_eq!((restored.scale, restored.growth_tracker), (32768.0, 1));
    }
}
