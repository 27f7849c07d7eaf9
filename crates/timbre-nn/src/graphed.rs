//! Fixed-shape work replayed as a CUDA graph. The live engine runs HuBERT and the pitch model
//! on the same shapes block after block, where launching each of their hundreds of kernels
//! from the CPU costs more than running them; on a CUDA device each such stage is captured
//! once and then replayed. A capture is checked against the eager run it was made beside; a
//! stage that cannot be captured, or whose replay differs, runs eagerly from then on and says
//! why once. On other devices a stage simply runs.

use anyhow::{Result, ensure};
use tch::{Kind, Tensor};
use timbre_torch_ext::CudaGraph;

/// Eager runs before the capture, as `torch.cuda.graph` advises (cuDNN and cuBLAS choose and
/// allocate their workspaces there, not under capture).
const WARMUP_RUNS: usize = 2;
/// How far a replay may stray from the eager run, relative to the eager output's largest
/// value: the two may pick different kernels, but a stale or unwritten buffer strays by far more.
const REPLAY_TOLERANCE: f64 = 1e-2;

/// One stage's graph, made for the work `K` names (the model and whatever else decides what the
/// stage computes). `K` is held while the graph lives, so a model it names stays loaded: the
/// graph reads that model's weights where they were at capture.
pub struct GraphedStage<K> {
    name: &'static str,
    enabled: bool,
    state: State<K>,
}

enum State<K> {
    Untried,
    Captured {
        key: K,
        graph: CudaGraph,
        input: Tensor,
        output: Tensor,
    },
    /// Refused for this key: it runs eagerly.
    Eager {
        key: K,
    },
}

impl<K: PartialEq> GraphedStage<K> {
    /// `name` says which stage a notice is about.
    pub fn new(name: &'static str) -> Self {
        GraphedStage {
            name,
            enabled: true,
            state: State::Untried,
        }
    }

    /// With `false`, every run is eager and any graph is dropped (the benchmark's comparison).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
        if !enabled {
            self.state = State::Untried;
        }
    }

    /// Whether the last run replayed (or captured) a graph.
    pub fn is_captured(&self) -> bool {
        matches!(self.state, State::Captured { .. })
    }

    /// `stage(input)`: on a CUDA device through a graph for `key` and `input`'s shape,
    /// captured on first use (or when either changes). `stage` must read nothing but `input`
    /// and what `key` holds, and never wait for the device.
    pub fn run(
        &mut self,
        key: K,
        input: &Tensor,
        mut stage: impl FnMut(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        if !self.enabled || !input.device().is_cuda() {
            return stage(input);
        }
        match &mut self.state {
            State::Captured {
                key: held,
                graph,
                input: fixed,
                output,
            } if *held == key && same_layout(fixed, input) => {
                fixed.copy_(input);
                graph.replay()?;
                return Ok(output.copy());
            }
            State::Eager { key: held } if *held == key => return stage(input),
            _ => {}
        }
        self.state = State::Untried;
        let eager = stage(input)?;
        self.state = match capture(input, &eager, &mut stage) {
            Ok((graph, fixed, output)) => State::Captured {
                key,
                graph,
                input: fixed,
                output,
            },
            Err(e) => {
                eprintln!("timbre: {} runs without a CUDA graph: {e:#}", self.name);
                State::Eager { key }
            }
        };
        Ok(eager)
    }
}

fn same_layout(a: &Tensor, b: &Tensor) -> bool {
    a.size() == b.size() && a.kind() == b.kind() && a.device() == b.device()
}

/// Captures `stage` over a copy of `input`, replays it once and checks the replay against
/// `eager`: the graph, the tensor to copy new input into and the tensor each replay writes.
fn capture(
    input: &Tensor,
    eager: &Tensor,
    stage: &mut impl FnMut(&Tensor) -> Result<Tensor>,
) -> Result<(CudaGraph, Tensor, Tensor)> {
    let fixed = input.copy();
    let (mut graph, output) = CudaGraph::capture(input.device(), WARMUP_RUNS, || stage(&fixed))?;
    graph.replay()?;
    agree(eager, &output)?;
    Ok((graph, fixed, output))
}

/// Whether a replay's output matches the eager run's, within [`REPLAY_TOLERANCE`].
fn agree(eager: &Tensor, replayed: &Tensor) -> Result<()> {
    ensure!(
        eager.size() == replayed.size(),
        "the replay gave shape {:?}, the eager run {:?}",
        replayed.size(),
        eager.size()
    );
    let eager = eager.to_kind(Kind::Double);
    let difference = (&eager - replayed.to_kind(Kind::Double))
        .abs()
        .max()
        .double_value(&[]);
    let scale = eager.abs().max().double_value(&[]).max(1.0);
    ensure!(
        difference <= REPLAY_TOLERANCE * scale,
        "the replay differs from the eager run by {difference:.3e} (largest value {scale:.3e})"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn a_stage_off_cuda_runs_as_it_is_and_captures_nothing() {
        let mut stage = GraphedStage::new("doubling");
        let input = Tensor::from_slice(&[1f32, -2.0, 3.5]);
        let mut runs = 0;
        for _ in 0..3 {
            let output = stage
                .run(1u8, &input, |x| {
                    runs += 1;
                    Ok(x * 2.0)
                })
                .unwrap();
            assert_eq!(Vec::<f32>::try_from(output).unwrap(), [2.0, -4.0, 7.0]);
        }
        assert_eq!(
            runs, 3,
            "each run is one eager call: no warm-up, no capture"
        );
        assert!(!stage.is_captured());
    }

    #[test]
    fn a_stage_error_reaches_the_caller() {
        let mut stage = GraphedStage::new("failing");
        let input = Tensor::zeros([2], (Kind::Float, Device::Cpu));
        let err = stage
            .run((), &input, |_| anyhow::bail!("the model is missing"))
            .unwrap_err();
        assert_eq!(err.to_string(), "the model is missing");
    }

    #[test]
    fn agreement_allows_kernel_rounding_and_refuses_stale_output() {
        let eager = Tensor::from_slice(&[100f32, -50.0, 0.5]);
        agree(&eager, &(&eager + 0.5)).unwrap();
        let err = agree(&eager, &(&eager + 2.0)).unwrap_err().to_string();
        assert!(
            err.contains("differs from the eager run by 2.000e0"),
            "{err}"
        );
        let err = agree(&eager, &eager.zeros_like()).unwrap_err().to_string();
        assert!(err.contains("by 1.000e2"), "{err}");
        let err = agree(&eager, &eager.narrow(0, 0, 2))
            .unwrap_err()
            .to_string();
        assert!(err.contains("shape [2]"), "{err}");
    }

    #[test]
    fn small_outputs_are_judged_on_an_absolute_scale() {
        let eager = Tensor::from_slice(&[1e-4f32, 0.0]);
        agree(&eager, &(&eager + 5e-3)).unwrap();
        assert!(agree(&eager, &(&eager + 5e-2)).is_err());
    }
}
