//! The fp16 loss scaler: torch.amp.GradScaler's dynamic scaling (init 65536, ×2 after 2000
//! finite steps, ×0.5 and the step skipped on an inf or NaN gradient), with its `state_dict()`
//! layout, which rvc-next saves under `scaler` in `G_<step>.pth`. Disabled, it scales by one and
//! never skips, as torch's is when AMP is off.

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use super::optimizer::AdamW;
use crate::checkpoint::Value;

const INIT_SCALE: f64 = 65536.0;
const GROWTH_FACTOR: f64 = 2.0;
const BACKOFF_FACTOR: f64 = 0.5;
const GROWTH_INTERVAL: i64 = 2000;

pub struct GradScaler {
    enabled: bool,
    scale: f64,
    growth_tracker: i64,
    /// Whether an optimizer step of the current iteration was skipped.
    found_inf: bool,
}

impl GradScaler {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            scale: INIT_SCALE,
            growth_tracker: 0,
            found_inf: false,
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    pub fn scale(&self) -> f64 {
        if self.enabled { self.scale } else { 1.0 }
    }

    pub fn scale_loss(&self, loss: &Tensor) -> Tensor {
        if self.enabled {
            loss * self.scale
        } else {
            loss.shallow_clone()
        }
    }

    /// Unscales `grads` in place and steps `optimizer` with them unless one holds an inf or a
    /// NaN; returns the gradients' global L2 norm (infinite when the step was skipped).
    pub fn step(&mut self, optimizer: &mut AdamW, grads: &[Tensor]) -> Result<f64> {
        // One read of the device for all the gradients: a read per gradient stalls a GPU
        // hundreds of times a step.
        let norm = tch::no_grad(|| {
            let squares: Vec<Tensor> = grads
                .iter()
                .filter(|g| g.defined())
                .map(|grad| {
                    if self.enabled {
                        let _ = grad.shallow_clone().g_mul_scalar_(1.0 / self.scale);
                    }
                    grad.square().sum(Kind::Double)
                })
                .collect();
            if squares.is_empty() {
                return 0.0;
            }
            Tensor::stack(&squares, 0)
                .sum(Kind::Double)
                .sqrt()
                .double_value(&[])
        });
        if !norm.is_finite() {
            if !self.enabled {
                bail!("the gradients are not finite (NaN or inf): training diverged");
            }
            self.found_inf = true;
            return Ok(f64::INFINITY);
        }
        optimizer.step(grads)?;
        Ok(norm)
    }

    /// The end of an iteration: back off after a skipped step, grow after enough good ones.
    pub fn update(&mut self) {
        if !self.enabled {
            return;
        }
        if self.found_inf {
            self.scale *= BACKOFF_FACTOR;
            self.growth_tracker = 0;
        } else {
            self.growth_tracker += 1;
            if self.growth_tracker == GROWTH_INTERVAL {
                self.scale *= GROWTH_FACTOR;
                self.growth_tracker = 0;
            }
        }
        self.found_inf = false;
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

    pub fn load_state_dict(&mut self, state: &Value) {
        if let Some(scale) = state.get("scale").and_then(Value::as_f64) {
            self.scale = scale;
        }
        if let Some(tracker) = state.get("_growth_tracker").and_then(Value::as_i64) {
            self.growth_tracker = tracker;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::optimizer::AdamWConfig;
    use tch::Device;

    #[test]
    fn an_infinite_gradient_skips_the_step_and_halves_the_scale() {
        let param = Tensor::ones([3], (Kind::Float, Device::Cpu));
        let mut optimizer = AdamW::new(vec![param.shallow_clone()], AdamWConfig::default());
        let mut scaler = GradScaler::new(true);
        let grad = Tensor::from_slice(&[1.0f32, f32::INFINITY, 0.0]);
        assert!(scaler.step(&mut optimizer, &[grad]).unwrap().is_infinite());
        scaler.update();
        assert_eq!(scaler.scale(), INIT_SCALE / 2.0);
        assert_eq!(param, Tensor::ones([3], (Kind::Float, Device::Cpu)));

        let grad = Tensor::from_slice(&[3.0f32, 4.0, 0.0]) * scaler.scale();
        let norm = scaler.step(&mut optimizer, &[grad]).unwrap();
        assert!(
            (norm - 5.0).abs() < 1e-9,
            "norm of the unscaled gradient: {norm}"
        );
        assert_ne!(param, Tensor::ones([3], (Kind::Float, Device::Cpu)));
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
        scaler.found_inf = true;
        scaler.update();
        scaler.update();
        let mut restored = GradScaler::new(true);
        restored.load_state_dict(&scaler.state_dict());
        assert_eq!((restored.scale, restored.growth_tracker), (32768.0, 1));
    }
}
