//! The optimizer and learning-rate schedule RVC trains with (rvc_next 0.2.16
//! `engine/train/loop.py`): `torch.optim.AdamW` over one parameter group, stepped either as
//! torch 2.11's single-tensor path does (`torch/optim/adam.py` `_single_tensor_adam`, what it
//! runs on the CPU by default; the CUDA default `foreach` path computes the same to rounding) or
//! by torch's fused kernel, as `AdamW(fused=True)` does (`_fused_adam`: one launch per device
//! and dtype instead of a dozen per parameter; timbre-torch-ext reaches it), and
//! `ExponentialLR` stepped once per epoch. The state saves to and loads from torch's
//! `optimizer.state_dict()` layout, so RVC resumes our checkpoints and we resume RVC's.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail, ensure};
use tch::{Device, Kind, Tensor};
use timbre_torch_ext::{AdamWStep, fused_adamw_};

use crate::checkpoint::Value;

/// AdamW's hyperparameters; the default is what RVC's configs give (`learning_rate` 1e-4,
/// `betas` (0.8, 0.99), `eps` 1e-9) with torch's default weight decay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamWConfig {
    /// Learning rate; the schedule lowers it epoch by epoch (RVC 1e-4).
    pub lr: f64,
    /// Decay rates `(beta1, beta2)` of the first and second moment averages (RVC (0.8, 0.99)).
    pub betas: (f64, f64),
    /// Added to the second moment's square root in the denominator (RVC 1e-9).
    pub eps: f64,
    /// Decoupled weight decay, applied as `param *= 1 - lr · weight_decay` (torch's 0.01).
    pub weight_decay: f64,
}

impl Default for AdamWConfig {
    fn default() -> Self {
        Self {
            lr: 1e-4,
            betas: (0.8, 0.99),
            eps: 1e-9,
            weight_decay: 0.01,
        }
    }
}

/// How a step updates the parameters: the same arithmetic, to rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdamWKernel {
    /// Parameter by parameter, as torch's `_single_tensor_adam`.
    SingleTensor,
    /// torch's `_fused_adamw_` over all the parameters of a device and dtype at once.
    Fused,
}

/// One parameter's moments, created at its first step.
struct ParamState {
    /// A float32 scalar, as torch keeps it: on the CPU for the single-tensor kernel (read there
    /// for the bias corrections), on the parameter's device for the fused one (which reads it
    /// there). Every count below 2²⁴ is exact.
    step: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
}

impl ParamState {
    fn fresh(param: &Tensor, kernel: AdamWKernel) -> Self {
        Self {
            step: Tensor::zeros([], (Kind::Float, step_device(param, kernel))),
            exp_avg: param.zeros_like(),
            exp_avg_sq: param.zeros_like(),
        }
    }
}

/// `grad` with `param`'s dtype and strides, which the fused CUDA kernel requires of every list.
/// torch's `.grad` has them by autograd's layout contract; gradients asked of autograd directly,
/// as the trainer asks them, may come channels-last or otherwise strided from cuDNN.
fn in_layout_of(grad: &Tensor, param: &Tensor) -> Tensor {
    if grad.kind() == param.kind() && grad.stride() == param.stride() {
        grad.shallow_clone()
    } else {
        let mut conformed = param.empty_like();
        conformed.copy_(grad);
        conformed
    }
}

fn step_device(param: &Tensor, kernel: AdamWKernel) -> Device {
    match kernel {
        AdamWKernel::SingleTensor => Device::Cpu,
        AdamWKernel::Fused => param.device(),
    }
}

/// `torch.optim.AdamW(params, lr, betas, eps, weight_decay)` with one parameter group.
pub struct AdamW {
    params: Vec<Tensor>,
    config: AdamWConfig,
    kernel: AdamWKernel,
    /// Set by the scheduler (torch's `LRScheduler` adds it to the group).
    initial_lr: Option<f64>,
    state: Vec<Option<ParamState>>,
}

impl AdamW {
    /// `params` in the order torch's `model.parameters()` gives them: the state dict numbers
    /// them so.
    pub fn new(params: Vec<Tensor>, config: AdamWConfig) -> Self {
        let state = params.iter().map(|_| None).collect();
        Self {
            params,
            config,
            kernel: AdamWKernel::SingleTensor,
            initial_lr: None,
            state,
        }
    }

    /// The same optimizer stepped by `kernel` (set before the first step or load).
    pub fn with_kernel(mut self, kernel: AdamWKernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// How its steps update the parameters.
    pub fn kernel(&self) -> AdamWKernel {
        self.kernel
    }

    /// The current learning rate (`param_groups[0]["lr"]`).
    pub fn lr(&self) -> f64 {
        self.config.lr
    }

    /// One step, in place on the parameters, with `grads[i]` the gradient of parameter `i`; a
    /// parameter whose gradient is undefined is skipped, as torch skips a `None` grad.
    pub fn step(&mut self, grads: &[Tensor]) -> Result<()> {
        self.step_unless_inf(grads, None)
    }

    /// A fused step that `found_inf` (a float32 scalar on the device, nonzero to skip) may
    /// skip, as the loss scaler hands it over; refused by the single-tensor kernel.
    pub fn step_skipping_on(&mut self, grads: &[Tensor], found_inf: &Tensor) -> Result<()> {
        self.step_unless_inf(grads, Some(found_inf))
    }

    /// [`AdamW::step`], which the fused kernel skips where `found_inf` (GradScaler's flag, a
    /// float32 scalar on the device) is set, with no wait for the device; the single-tensor
    /// kernel takes no flag (its caller reads it and skips the step).
    pub(super) fn step_unless_inf(
        &mut self,
        grads: &[Tensor],
        found_inf: Option<&Tensor>,
    ) -> Result<()> {
        ensure!(
            grads.len() == self.params.len(),
            "{} gradients for {} parameters",
            grads.len(),
            self.params.len()
        );
        match (self.kernel, found_inf) {
            (AdamWKernel::Fused, _) => self.fused_step(grads, found_inf),
            (AdamWKernel::SingleTensor, None) => self.single_tensor_step(grads),
            (AdamWKernel::SingleTensor, Some(_)) => {
                bail!("the single-tensor AdamW cannot skip a step on the device")
            }
        }
    }

    fn single_tensor_step(&mut self, grads: &[Tensor]) -> Result<()> {
        let AdamWConfig {
            lr,
            betas: (beta1, beta2),
            eps,
            weight_decay,
        } = self.config;
        tch::no_grad(|| -> Result<()> {
            for ((param, grad), state) in self.params.iter().zip(grads).zip(&mut self.state) {
                if !grad.defined() {
                    continue;
                }
                let state = state.get_or_insert_with(|| ParamState::fresh(param, self.kernel));
                let _ = state.step.f_add_scalar_(1.0)?;
                let step = state.step.double_value(&[]);
                let mut param = param.shallow_clone();
                if weight_decay != 0.0 {
                    let _ = param.f_mul_scalar_(1.0 - lr * weight_decay)?;
                }
                let _ = state.exp_avg.f_lerp_(grad, 1.0 - beta1)?;
                // torch's `addcmul_(grad, grad, value=1 - beta2)` computes `value · grad · grad`
                // left to right: the same products, so the same rounding.
                let _ = state.exp_avg_sq.f_mul_scalar_(beta2)?;
                let _ = state
                    .exp_avg_sq
                    .f_addcmul_(&grad.f_mul_scalar(1.0 - beta2)?, grad)?;
                let bias_correction1 = 1.0 - beta1.powf(step);
                let bias_correction2 = 1.0 - beta2.powf(step);
                let step_size = lr / bias_correction1;
                // Python's `** 0.5`, which is `pow`, not `sqrt`.
                let bias_correction2_sqrt = bias_correction2.powf(0.5);
                let denom = state
                    .exp_avg_sq
                    .f_sqrt()?
                    .f_div_scalar(bias_correction2_sqrt)?
                    .f_add_scalar(eps)?;
                // `addcdiv_(exp_avg, denom, value=-step_size)` likewise: `(value · exp_avg) / denom`.
                let _ = param.f_addcdiv_(&state.exp_avg.f_mul_scalar(-step_size)?, &denom)?;
            }
            Ok(())
        })
    }

    /// `_fused_adam` with `decoupled_weight_decay`: the parameters with a gradient, grouped by
    /// device and dtype as torch groups them, one kernel per group.
    fn fused_step(&mut self, grads: &[Tensor], found_inf: Option<&Tensor>) -> Result<()> {
        let AdamWConfig {
            lr,
            betas: (beta1, beta2),
            eps,
            weight_decay,
        } = self.config;
        let hyper = AdamWStep {
            lr,
            beta1,
            beta2,
            weight_decay,
            eps,
            maximize: false,
        };
        let mut groups: Vec<((Device, Kind), Vec<usize>)> = Vec::new();
        for (i, (param, grad)) in self.params.iter().zip(grads).enumerate() {
            if !grad.defined() {
                continue;
            }
            self.state[i].get_or_insert_with(|| ParamState::fresh(param, self.kernel));
            let key = (param.device(), param.kind());
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push(i),
                None => groups.push((key, vec![i])),
            }
        }
        tch::no_grad(|| -> Result<()> {
            for ((device, _), members) in groups {
                let states: Vec<&ParamState> = members
                    .iter()
                    .map(|&i| self.state[i].as_ref().expect("created above"))
                    .collect();
                let found_inf = found_inf.map(|f| f.to_device(device));
                let grads: Vec<Tensor> = members
                    .iter()
                    .map(|&i| in_layout_of(&grads[i], &self.params[i]))
                    .collect();
                fused_adamw_(
                    &members.iter().map(|&i| &self.params[i]).collect::<Vec<_>>(),
                    &grads.iter().collect::<Vec<_>>(),
                    &states.iter().map(|s| &s.exp_avg).collect::<Vec<_>>(),
                    &states.iter().map(|s| &s.exp_avg_sq).collect::<Vec<_>>(),
                    &states.iter().map(|s| &s.step).collect::<Vec<_>>(),
                    hyper,
                    None,
                    found_inf.as_ref(),
                )?;
            }
            Ok(())
        })
    }

    /// torch 2.11's `AdamW.state_dict()`: `state` (by parameter index, for the parameters that
    /// have stepped) and the one `param_groups` entry with every key torch writes.
    pub fn state_dict(&self) -> Value {
        let text = |s: &str| Value::Str(s.to_string());
        let state = self
            .state
            .iter()
            .enumerate()
            .filter_map(|(i, state)| {
                let state = state.as_ref()?;
                let entries = vec![
                    (
                        text("step"),
                        Value::Tensor(state.step.to_device(Device::Cpu)),
                    ),
                    (
                        text("exp_avg"),
                        Value::Tensor(state.exp_avg.shallow_clone()),
                    ),
                    (
                        text("exp_avg_sq"),
                        Value::Tensor(state.exp_avg_sq.shallow_clone()),
                    ),
                ];
                Some((Value::Int(i as i64), Value::Dict(entries)))
            })
            .collect();
        let config = &self.config;
        let mut group = vec![
            (text("lr"), Value::Float(config.lr)),
            (
                text("betas"),
                Value::Tuple(vec![
                    Value::Float(config.betas.0),
                    Value::Float(config.betas.1),
                ]),
            ),
            (text("eps"), Value::Float(config.eps)),
            (text("weight_decay"), Value::Float(config.weight_decay)),
            (text("amsgrad"), Value::Bool(false)),
            (text("maximize"), Value::Bool(false)),
            (text("foreach"), Value::None),
            (text("capturable"), Value::Bool(false)),
            (text("differentiable"), Value::Bool(false)),
            // torch's default, whichever kernel steps here: RVC resumes with its own choice.
            (text("fused"), Value::None),
            (text("decoupled_weight_decay"), Value::Bool(true)),
        ];
        if let Some(initial_lr) = self.initial_lr {
            group.push((text("initial_lr"), Value::Float(initial_lr)));
        }
        let indices = (0..self.params.len() as i64).map(Value::Int).collect();
        group.push((text("params"), Value::List(indices)));
        Value::Dict(vec![
            (text("state"), Value::Dict(state)),
            (text("param_groups"), Value::List(vec![Value::Dict(group)])),
        ])
    }

    /// Takes the hyperparameters and moments of a torch `AdamW.state_dict()` (read from
    /// `source`, named in errors), as torch's `load_state_dict` does: the saved group's
    /// parameters map, in order, onto ours, and the moments move to each parameter's device and
    /// dtype. Refuses what our step would not continue (amsgrad, maximize, Adam's coupled
    /// weight decay) and moments of another shape than their parameter's.
    pub fn load_state_dict(&mut self, value: &Value, source: &Path) -> Result<()> {
        self.load(value)
            .map_err(|e| anyhow!("{}: optimizer state: {e:#}", source.display()))
    }

    fn load(&mut self, value: &Value) -> Result<()> {
        let groups = value
            .get("param_groups")
            .and_then(Value::as_list)
            .context("no `param_groups` list")?;
        let [group] = groups else {
            bail!(
                "{} parameter groups; RVC's optimizers have one",
                groups.len()
            );
        };
        let saved_ids = group
            .get("params")
            .and_then(Value::as_list)
            .context("the group has no `params` list")?;
        ensure!(
            saved_ids.len() == self.params.len(),
            "the group has {} parameters, this model {}: not the same model",
            saved_ids.len(),
            self.params.len()
        );
        let number = |key: &str| {
            group
                .get(key)
                .and_then(Value::as_f64)
                .with_context(|| format!("the group has no number `{key}`"))
        };
        let betas = group
            .get("betas")
            .and_then(Value::as_list)
            .and_then(|b| Some((b.first()?.as_f64()?, b.get(1)?.as_f64()?)))
            .context("the group has no pair `betas`")?;
        let config = AdamWConfig {
            lr: number("lr")?,
            betas,
            eps: number("eps")?,
            weight_decay: number("weight_decay")?,
        };
        let flag = |key: &str| group.get(key).and_then(Value::as_i64).map(|v| v != 0);
        for (key, unsupported) in [
            ("amsgrad", true),
            ("maximize", true),
            ("decoupled_weight_decay", false),
        ] {
            if flag(key) == Some(unsupported) {
                bail!("`{key}` is {unsupported}, which this AdamW does not do");
            }
        }
        let initial_lr = group.get("initial_lr").and_then(Value::as_f64);

        let saved_states = value
            .get("state")
            .and_then(Value::as_dict)
            .context("no `state` dict")?;
        let mut state: Vec<Option<ParamState>> = self.params.iter().map(|_| None).collect();
        for (key, entry) in saved_states {
            let id = key
                .as_i64()
                .context("a `state` key is not a parameter index")?;
            let index = saved_ids
                .iter()
                .position(|saved| saved.as_i64() == Some(id))
                .with_context(|| format!("state for parameter {id}, which is in no group"))?;
            let param = &self.params[index];
            let moment = |name: &str| -> Result<Tensor> {
                let tensor = entry
                    .get(name)
                    .and_then(Value::as_tensor)
                    .with_context(|| format!("parameter {id} has no tensor `{name}`"))?;
                ensure!(
                    tensor.size() == param.size(),
                    "parameter {id}'s `{name}` has shape {:?}, the parameter {:?}",
                    tensor.size(),
                    param.size()
                );
                Ok(tensor.to_device(param.device()).to_kind(param.kind()))
            };
            let step = match entry.get("step") {
                Some(Value::Tensor(t)) if t.numel() == 1 => t.double_value(&[]),
                Some(other) => other
                    .as_f64()
                    .with_context(|| format!("parameter {id}'s `step` is not a number"))?,
                None => bail!("parameter {id} has no `step`"),
            };
            state[index] = Some(ParamState {
                step: Tensor::scalar_tensor(step, (Kind::Float, step_device(param, self.kernel))),
                exp_avg: moment("exp_avg")?,
                exp_avg_sq: moment("exp_avg_sq")?,
            });
        }
        self.config = config;
        self.initial_lr = initial_lr;
        self.state = state;
        Ok(())
    }
}

/// `torch.optim.lr_scheduler.ExponentialLR`, stepped once per epoch: after `n` steps from a
/// fresh start the rate is `initial_lr · gammaⁿ` (RVC's configs give `lr_decay` 0.999875),
/// multiplied one step at a time as torch does.
pub struct ExponentialLr {
    gamma: f64,
}

impl ExponentialLr {
    /// As RVC makes it: the group's `initial_lr` defaults to the current rate
    /// (`setdefault("initial_lr", learning_rate)`), and constructing it leaves the rate as it
    /// is, whatever epoch a resumed run starts at (torch's `_initial_step`).
    pub fn new(optimizer: &mut AdamW, gamma: f64) -> Self {
        optimizer.initial_lr.get_or_insert(optimizer.config.lr);
        Self { gamma }
    }

    /// The end of an epoch: the rate times `gamma`.
    pub fn step(&self, optimizer: &mut AdamW) {
        optimizer.config.lr *= self.gamma;
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// A gradient strided unlike its parameter (as cuDNN may hand one back) steps the
    /// parameter as a contiguous one does.
    #[test]
    fn a_gradient_strided_unlike_its_parameter_steps_the_same() {
        let grad = Tensor::arange(12, (Kind::Float, Device::Cpu)).view([3, 4]) / 7.0;
        let strided = grad.transpose(0, 1).contiguous().transpose(0, 1);
        assert_ne!(strided.stride(), grad.stride());
        let stepped = |grad: &Tensor| {
            let param = Tensor::ones([3, 4], (Kind::Float, Device::Cpu));
            let mut optimizer = AdamW::new(vec![param.shallow_clone()], AdamWConfig::default())
                .with_kernel(AdamWKernel::Fused);
            optimizer.step(std::slice::from_ref(grad)).unwrap();
            param
        };
        assert!(stepped(&strided).equal(&stepped(&grad)));
        assert!(!stepped(&grad).equal(&Tensor::ones([3, 4], (Kind::Float, Device::Cpu))));
    }
}
