//! `cargo bench -p timbre-nn --bench cuda_check -- OUT_DIR`, for the GPU machine (bench/gpu.sh):
//! the fused AdamW on CUDA, stepped three times with the loss scaler's inf flag in between,
//! its inputs and results written to OUT_DIR/fused_adamw.safetensors for
//! bench/gpu_check_adamw.py to replay with torch's `AdamW(fused=True)` on CUDA; and a CUDA
//! graph captured and replayed against the same work run eagerly, with both timed.

use std::time::Instant;

use anyhow::{Context, Result, ensure};
use tch::{Device, Kind, Tensor};
use timbre_nn::train::optimizer::{AdamW, AdamWConfig, AdamWKernel};
use timbre_torch_ext::CudaGraph;

const SHAPES: [&[i64]; 3] = [&[64, 32], &[1000], &[8, 3, 5]];
const STEPS: usize = 3;

fn main() -> Result<()> {
    let out = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .context("usage: cuda_check OUT_DIR")?;
    ensure!(
        tch::Cuda::is_available(),
        "no CUDA device: this check is for the GPU machine"
    );
    let device = Device::Cuda(0);
    fused_adamw(device, std::path::Path::new(&out))?;
    graph(device)?;
    Ok(())
}

fn fused_adamw(device: Device, out: &std::path::Path) -> Result<()> {
    tch::manual_seed(7);
    let initial: Vec<Tensor> = SHAPES
        .iter()
        .map(|s| Tensor::randn(*s, (Kind::Float, device)))
        .collect();
    let params: Vec<Tensor> = initial.iter().map(Tensor::copy).collect();
    let config = AdamWConfig {
        lr: 1e-3,
        ..AdamWConfig::default()
    };
    let mut optimizer = AdamW::new(params.iter().map(Tensor::shallow_clone).collect(), config)
        .with_kernel(AdamWKernel::Fused);
    let mut saved: Vec<(String, Tensor)> = initial
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("initial.{i}"), t.to_device(Device::Cpu)))
        .collect();
    for k in 0..STEPS {
        let grads: Vec<Tensor> = SHAPES
            .iter()
            .map(|s| Tensor::randn(*s, (Kind::Float, device)))
            .collect();
        optimizer.step(&grads)?;
        for (i, (grad, param)) in grads.iter().zip(&params).enumerate() {
            saved.push((format!("grad.{k}.{i}"), grad.to_device(Device::Cpu)));
            saved.push((format!("after.{k}.{i}"), param.to_device(Device::Cpu)));
        }
    }
    // A found inf leaves everything as it was, on the device, with no read in between.
    let before: Vec<Tensor> = params.iter().map(Tensor::copy).collect();
    let found_inf = Tensor::ones([], (Kind::Float, device));
    let grads: Vec<Tensor> = params.iter().map(Tensor::ones_like).collect();
    let mut optimizer_inf = optimizer;
    optimizer_inf.step_skipping_on(&grads, &found_inf)?;
    for (a, b) in params.iter().zip(&before) {
        ensure!(a.equal(b), "a step with found_inf set changed a parameter");
    }
    let file = out.join("fused_adamw.safetensors");
    Tensor::write_safetensors(&saved, &file)?;
    println!(
        "fused AdamW on CUDA: {STEPS} steps written to {}; a found-inf step changed nothing",
        file.display()
    );
    Ok(())
}

/// A launch-bound chain (many small kernels, as a training step's are) captured and replayed
/// on fresh input, against the same chain run eagerly.
fn graph(device: Device) -> Result<()> {
    let weight = Tensor::randn([256, 256], (Kind::Float, device)) / 16.0;
    let mut input = Tensor::zeros([64, 256], (Kind::Float, device));
    let chain = |x: &Tensor| -> Tensor {
        (0..100).fold(x.shallow_clone(), |x, _| (x.matmul(&weight)).tanh() + 0.01)
    };
    let (mut graph, output) = CudaGraph::capture(device, 2, || Ok(chain(&input)))?;
    let fresh = Tensor::randn([64, 256], (Kind::Float, device));
    input.copy_(&fresh);
    graph.replay()?;
    let eager = chain(&fresh);
    let error = (&output - &eager).abs().max().double_value(&[]);
    ensure!(
        error < 1e-4,
        "the replayed graph differs from the eager run by {error}"
    );
    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        tch::Cuda::synchronize(0);
        let start = Instant::now();
        for _ in 0..20 {
            f()?;
        }
        tch::Cuda::synchronize(0);
        Ok(start.elapsed().as_secs_f64() / 20.0 * 1e3)
    };
    let replay = time(&mut || graph.replay())?;
    let eager = time(&mut || {
        let _ = chain(&input);
        Ok(())
    })?;
    println!(
        "CUDA graph: replay equals the eager run (max difference {error:.1e}); 100 matmul+tanh \
         steps: replay {replay:.3} ms, eager {eager:.3} ms ({:.1}x)",
        eager / replay
    );
    Ok(())
}
