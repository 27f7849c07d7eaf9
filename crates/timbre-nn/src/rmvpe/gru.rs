//! RMVPE's BiGRU (`BiGRU` of RVC's `infer/lib/rmvpe.py`: torch.nn.GRU, `batch_first`,
//! `bidirectional`). On a CUDA device a long sequence runs through CUDA graphs: cuDNN steps a
//! GRU one frame at a time with two kernels a step, so a minute of audio (6,000 frames, both
//! directions) is 24,000 launches from the CPU, which cost several times the kernels
//! themselves. Each direction is instead run as a one-way GRU over chunks of [`CHUNK_FRAMES`]
//! frames, its state carried from chunk to chunk (the backward direction over the reversed
//! sequence), and one chunk's GRU is captured once and replayed for every chunk. The first such
//! run of a model is checked against the eager bidirectional GRU; a capture that fails or
//! differs leaves that model eager, as [`crate::graphed`] does for the live engine's stages.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Mutex;

use anyhow::{Result, ensure};
use tch::{Kind, Tensor};
use timbre_torch_ext::CudaGraph;

use crate::weights::Weights;

/// Frames of one replayed chunk. The last chunk is padded at its end, which a one-way GRU
/// never looks back at; at most this many steps are wasted per direction.
const CHUNK_FRAMES: i64 = 256;
/// Sequences shorter than this run eagerly (the live engine's tail, which it graphs whole).
const MIN_GRAPHED_FRAMES: i64 = 2 * CHUNK_FRAMES;
/// How far the graphed run may stray from the eager one, relative to the eager output's
/// largest value (the GRU's outputs are in (−1, 1)): fp16 kernels may round differently.
const TOLERANCE: f64 = 2e-2;

/// A bidirectional multi-layer GRU.
pub(super) struct BiGru {
    /// Per layer and direction: w_ih, w_hh, b_ih, b_hh, as `torch.gru` takes them.
    params: Vec<Tensor>,
    layers: i64,
    hidden: i64,
    graphs: Mutex<Graphs>,
}

#[derive(Default)]
struct Graphs {
    /// Set once the graphed run failed or disagreed with the eager one; the reason was said.
    refused: bool,
    /// Whether a graphed run has been checked against the eager one.
    checked: bool,
    chunks: HashMap<ChunkKey, ChunkGraph>,
}

/// What one chunk graph computes: a layer's direction over `[batch, CHUNK_FRAMES, width]` of a
/// kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ChunkKey {
    layer: i64,
    reverse: bool,
    batch: i64,
    width: i64,
    kind: Kind,
}

/// Runs one chunk of a layer's direction from a state: its output and final state.
type ChunkRunner<'a> = dyn FnMut(ChunkKey, &Tensor, &Tensor) -> Result<(Tensor, Tensor)> + 'a;

/// A captured one-way GRU over one chunk: the tensors a replay reads and writes.
struct ChunkGraph {
    graph: CudaGraph,
    input: Tensor,
    state: Tensor,
    output: Tensor,
    final_state: Tensor,
}

impl BiGru {
    pub(super) fn load(
        w: &Weights,
        prefix: &str,
        layers: usize,
        input: i64,
        hidden: i64,
    ) -> Result<Self> {
        let mut params = Vec::with_capacity(layers * 8);
        for layer in 0..layers {
            let layer_input = if layer == 0 { input } else { 2 * hidden };
            for direction in ["", "_reverse"] {
                let name = |kind: &str| format!("{prefix}.{kind}_l{layer}{direction}");
                params.push(w.get_shaped(&name("weight_ih"), &[3 * hidden, layer_input])?);
                params.push(w.get_shaped(&name("weight_hh"), &[3 * hidden, hidden])?);
                params.push(w.get_shaped(&name("bias_ih"), &[3 * hidden])?);
                params.push(w.get_shaped(&name("bias_hh"), &[3 * hidden])?);
            }
        }
        Ok(Self {
            params,
            layers: layers as i64,
            hidden,
            graphs: Mutex::default(),
        })
    }

    /// `[batch, frames, input]` → `[batch, frames, 2 × hidden]`.
    pub(super) fn forward(&self, x: &Tensor) -> Tensor {
        let graphed = x.device().is_cuda()
            && x.size()[1] >= MIN_GRAPHED_FRAMES
            && !timbre_torch_ext::is_capturing();
        if graphed && let Some(out) = self.forward_graphed(x) {
            return out;
        }
        self.forward_eager(x)
    }

    /// torch's bidirectional GRU in one call.
    fn forward_eager(&self, x: &Tensor) -> Tensor {
        let h0 = Tensor::zeros(
            [2 * self.layers, x.size()[0], self.hidden],
            (x.kind(), x.device()),
        );
        x.gru(&h0, &self.params, true, self.layers, 0.0, false, true, true)
            .0
    }

    /// The graphed run, checked against the eager one the first time; None when this model
    /// runs eagerly.
    fn forward_graphed(&self, x: &Tensor) -> Option<Tensor> {
        let mut graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        if graphs.refused {
            return None;
        }
        let graphed = self.forward_chunked(x, &mut |key, chunk, state| {
            graphs.replay(&self.params, key, chunk, state)
        });
        let outcome = graphed.and_then(|out| {
            if !graphs.checked {
                agree(&self.forward_eager(x), &out)?;
                graphs.checked = true;
            }
            Ok(out)
        });
        match outcome {
            Ok(out) => Some(out),
            Err(e) => {
                eprintln!("timbre: RMVPE's GRU runs without CUDA graphs: {e:#}");
                *graphs = Graphs {
                    refused: true,
                    ..Graphs::default()
                };
                None
            }
        }
    }

    /// Each layer as two one-way GRUs over chunks, `run_chunk(key, chunk, state)` giving a
    /// chunk's output and final state.
    fn forward_chunked(&self, x: &Tensor, run_chunk: &mut ChunkRunner<'_>) -> Result<Tensor> {
        let (batch, frames) = (x.size()[0], x.size()[1]);
        let padded = (frames + CHUNK_FRAMES - 1) / CHUNK_FRAMES * CHUNK_FRAMES;
        let mut input = x.shallow_clone();
        for layer in 0..self.layers {
            let mut directions = Vec::with_capacity(2);
            for reverse in [false, true] {
                let sequence = if reverse {
                    input.flip([1])
                } else {
                    input.shallow_clone()
                };
                let sequence = sequence.constant_pad_nd([0, 0, 0, padded - frames]);
                let key = ChunkKey {
                    layer,
                    reverse,
                    batch,
                    width: sequence.size()[2],
                    kind: sequence.kind(),
                };
                let mut state = Tensor::zeros([1, batch, self.hidden], (x.kind(), x.device()));
                let mut outputs = Vec::with_capacity((padded / CHUNK_FRAMES) as usize);
                for start in (0..padded).step_by(CHUNK_FRAMES as usize) {
                    let chunk = sequence.narrow(1, start, CHUNK_FRAMES);
                    let (output, final_state) = run_chunk(key, &chunk, &state)?;
                    outputs.push(output);
                    state = final_state;
                }
                let out = Tensor::cat(&outputs, 1).narrow(1, 0, frames);
                directions.push(if reverse { out.flip([1]) } else { out });
            }
            input = Tensor::cat(&directions, 2);
        }
        Ok(input)
    }
}

/// One chunk of a layer's direction, eagerly: `torch.gru` one-way with that direction's weights.
fn run_chunk_eager(
    params: &[Tensor],
    key: ChunkKey,
    chunk: &Tensor,
    state: &Tensor,
) -> (Tensor, Tensor) {
    let first = (key.layer as usize * 2 + usize::from(key.reverse)) * 4;
    chunk.gru(
        state,
        &params[first..first + 4],
        true,
        1,
        0.0,
        false,
        false,
        true,
    )
}

impl Graphs {
    /// A chunk through its graph, captured on first use. The outputs are copies: the next
    /// replay overwrites the graph's own.
    fn replay(
        &mut self,
        params: &[Tensor],
        key: ChunkKey,
        chunk: &Tensor,
        state: &Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let graph = match self.chunks.entry(key) {
            Entry::Occupied(held) => held.into_mut(),
            Entry::Vacant(slot) => {
                let input = chunk.copy();
                let start = state.copy();
                let (graph, (output, final_state)) = CudaGraph::capture(chunk.device(), 2, || {
                    Ok(run_chunk_eager(params, key, &input, &start))
                })?;
                slot.insert(ChunkGraph {
                    graph,
                    input,
                    state: start,
                    output,
                    final_state,
                })
            }
        };
        graph.input.copy_(chunk);
        graph.state.copy_(state);
        graph.graph.replay()?;
        Ok((graph.output.copy(), graph.final_state.copy()))
    }
}

/// Whether the graphed output matches the eager one within [`TOLERANCE`].
fn agree(eager: &Tensor, graphed: &Tensor) -> Result<()> {
    ensure!(
        eager.size() == graphed.size(),
        "the graphed GRU gave shape {:?}, the eager one {:?}",
        graphed.size(),
        eager.size()
    );
    let eager = eager.to_kind(Kind::Double);
    let difference = (&eager - graphed.to_kind(Kind::Double))
        .abs()
        .max()
        .double_value(&[]);
    let scale = eager.abs().max().double_value(&[]).max(1e-3);
    ensure!(
        difference <= TOLERANCE * scale,
        "the graphed GRU differs from the eager one by {difference:.3e} (largest value {scale:.3e})"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use tch::Device;

    use super::*;

    fn random_gru(layers: usize, input: i64, hidden: i64) -> BiGru {
        tch::manual_seed(7);
        let mut tensors = HashMap::new();
        for layer in 0..layers {
            let width = if layer == 0 { input } else { 2 * hidden };
            for direction in ["", "_reverse"] {
                let mut add = |kind: &str, shape: &[i64]| {
                    let name = format!("gru.{kind}_l{layer}{direction}");
                    let values = Tensor::rand(shape, (Kind::Float, Device::Cpu)) * 0.4 - 0.2;
                    tensors.insert(name, values);
                };
                add("weight_ih", &[3 * hidden, width]);
                add("weight_hh", &[3 * hidden, hidden]);
                add("bias_ih", &[3 * hidden]);
                add("bias_hh", &[3 * hidden]);
            }
        }
        BiGru::load(
            &Weights::new(tensors, "random"),
            "gru",
            layers,
            input,
            hidden,
        )
        .unwrap()
    }

    #[test]
    fn chunked_one_way_runs_equal_the_bidirectional_gru() {
        // Two layers, a length that leaves a padded last chunk, and a batch of two: every
        // part of the decomposition (reversal, padding, carried state, layer inputs).
        let gru = random_gru(2, 12, 8);
        let x = Tensor::rand([2, 2 * CHUNK_FRAMES + 37, 12], (Kind::Float, Device::Cpu)) - 0.5;
        let eager = gru.forward_eager(&x);
        let mut chunks = 0;
        let chunked = gru
            .forward_chunked(&x, &mut |key, chunk, state| {
                chunks += 1;
                assert_eq!(chunk.size(), [2, CHUNK_FRAMES, key.width]);
                Ok(run_chunk_eager(&gru.params, key, chunk, state))
            })
            .unwrap();
        assert_eq!(chunks, 2 * 2 * 3, "layers × directions × chunks");
        assert_eq!(chunked.size(), eager.size());
        let difference = (&chunked - &eager).abs().max().double_value(&[]);
        assert!(difference < 1e-5, "differs by {difference:e}");
        agree(&eager, &chunked).unwrap();
    }

    #[test]
    fn agreement_refuses_a_stale_chunk() {
        let gru = random_gru(1, 6, 4);
        let x = Tensor::rand([1, 3 * CHUNK_FRAMES, 6], (Kind::Float, Device::Cpu));
        let eager = gru.forward_eager(&x);
        // A graph whose input was never refreshed: every chunk computes the first one.
        let first = x.narrow(1, 0, CHUNK_FRAMES);
        let stale = gru
            .forward_chunked(&x, &mut |key, _, state| {
                let chunk = if key.reverse {
                    first.flip([1])
                } else {
                    first.shallow_clone()
                };
                Ok(run_chunk_eager(&gru.params, key, &chunk, state))
            })
            .unwrap();
        let err = agree(&eager, &stale).unwrap_err().to_string();
        assert!(err.contains("differs from the eager one"), "{err}");
    }
}
