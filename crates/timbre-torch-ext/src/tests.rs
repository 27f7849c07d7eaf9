use tch::{Device, Kind, Tensor};

use super::*;

fn borrow(list: &[Tensor; 2]) -> [&Tensor; 2] {
    [&list[0], &list[1]]
}

fn scalar(value: f64) -> Tensor {
    Tensor::from(value as f32)
}

const HYPER: AdamWStep = AdamWStep {
    lr: 0.1,
    beta1: 0.8,
    beta2: 0.99,
    weight_decay: 0.01,
    eps: 1e-9,
    maximize: false,
};

#[test]
fn the_first_fused_adamw_step_moves_each_weight_by_lr_against_its_gradient_sign() {
    // At step 1 the bias-corrected moments are g and g², so the update is lr · g / (|g| + eps)
    // after the decoupled decay p · (1 - lr · wd).
    let params = [
        Tensor::from_slice(&[1.0f32, -2.0, 3.0]),
        Tensor::from_slice(&[0.5f32]),
    ];
    let grads = [
        Tensor::from_slice(&[0.5f32, -4.0, 0.0]),
        Tensor::from_slice(&[-1.0f32]),
    ];
    let exp_avgs = params.each_ref().map(Tensor::zeros_like);
    let exp_avg_sqs = params.each_ref().map(Tensor::zeros_like);
    let steps = [scalar(0.0), scalar(0.0)];
    fused_adamw_(
        &borrow(&params),
        &borrow(&grads),
        &borrow(&exp_avgs),
        &borrow(&exp_avg_sqs),
        &borrow(&steps),
        HYPER,
        None,
        None,
    )
    .unwrap();
    let decay = 1.0 - 0.1 * 0.01;
    let expected = Tensor::from_slice(&[1.0 * decay - 0.1, -2.0 * decay + 0.1, 3.0 * decay])
        .to_kind(Kind::Float);
    assert!(
        params[0].allclose(&expected, 1e-6, 1e-6, false),
        "{params:?}"
    );
    assert!((params[1].double_value(&[]) - (0.5 * decay + 0.1)).abs() < 1e-6);
    assert_eq!(steps[1].double_value(&[]), 1.0);
    assert!(exp_avg_sqs[0].allclose(&(grads[0].square() * 0.01), 1e-7, 1e-9, false));
}

#[test]
fn a_found_inf_leaves_the_weights_moments_and_step_count_as_they_were() {
    let param = Tensor::from_slice(&[1.0f32, 2.0]);
    let grad = Tensor::from_slice(&[f32::INFINITY, 1.0]);
    let (exp_avg, exp_avg_sq, step) = (param.zeros_like(), param.zeros_like(), scalar(3.0));
    let found_inf = scalar(0.0);
    amp_unscale_(&[&grad], &found_inf, &scalar(0.5)).unwrap();
    assert_eq!(found_inf.double_value(&[]), 1.0);
    fused_adamw_(
        &[&param],
        &[&grad],
        &[&exp_avg],
        &[&exp_avg_sq],
        &[&step],
        HYPER,
        None,
        Some(&found_inf),
    )
    .unwrap();
    assert_eq!(param, Tensor::from_slice(&[1.0f32, 2.0]));
    assert_eq!(exp_avg, param.zeros_like());
    assert_eq!(step.double_value(&[]), 3.0);
}

#[test]
fn unscaling_finite_gradients_divides_them_and_finds_nothing() {
    let grad = Tensor::from_slice(&[4.0f32, -8.0]);
    let found_inf = scalar(0.0);
    amp_unscale_(&[&grad], &found_inf, &scalar(0.25)).unwrap();
    assert_eq!(grad, Tensor::from_slice(&[1.0f32, -2.0]));
    assert_eq!(found_inf.double_value(&[]), 0.0);
}

#[test]
fn foreach_norm_gives_each_tensors_l2_norm() {
    let a = Tensor::from_slice(&[3.0f32, 4.0]);
    let b = Tensor::from_slice(&[-12.0f32, 5.0, 0.0]);
    let norms = foreach_norm(&[&a, &b]).unwrap();
    let values: Vec<f64> = norms.iter().map(|n| n.double_value(&[])).collect();
    assert_eq!(values, [5.0, 13.0]);
}

#[test]
fn mismatched_lists_are_refused() {
    let p = Tensor::from_slice(&[1.0f32]);
    let err = fused_adamw_(&[&p], &[], &[&p], &[&p], &[&p], HYPER, None, None).unwrap_err();
    assert!(err.to_string().contains("different lengths"), "{err}");
}

#[test]
fn graph_capture_on_the_cpu_says_it_needs_a_cuda_device() {
    let err = CudaGraph::capture(Device::Cpu, 0, || Ok(()))
        .err()
        .expect("no graph on the CPU");
    assert!(err.to_string().contains("need a CUDA device"), "{err}");
}

#[test]
fn graph_capture_without_a_cuda_device_says_so() {
    if tch::Cuda::is_available() {
        return; // the GPU script (bench/gpu.sh) runs the capture itself there
    }
    let mut ran = false;
    let err = CudaGraph::capture(Device::Cuda(0), 1, || {
        ran = true;
        Ok(())
    })
    .err()
    .expect("no CUDA device here");
    assert!(!ran, "the body ran without a device");
    assert!(err.to_string().contains("CUDA"), "{err}");
}

#[test]
fn autocast_is_switched_off_inside_and_back_on_after() {
    // tch::autocast does nothing without a CUDA device; the flag itself is the thread's.
    // SAFETY: sets a thread-local flag.
    unsafe { timbre_ext_set_cuda_autocast(1) };
    assert!(cuda_autocast());
    without_cuda_autocast(|| assert!(!cuda_autocast()));
    assert!(cuda_autocast());
    // SAFETY: sets a thread-local flag back.
    unsafe { timbre_ext_set_cuda_autocast(0) };
    assert!(!cuda_autocast());
}

#[test]
fn the_cuda_backend_beside_the_venvs_libtorch_is_loaded_before_the_first_torch_call() {
    // A source build links libtorch's CPU libraries only; the PyPI torch it builds against has
    // libtorch_cuda beside them, loaded from .init_array.
    let beside = cuda::backend()
        .library
        .as_ref()
        .expect("libtorch_cuda beside the venv's libtorch_cpu was loaded");
    assert!(beside.ends_with("torch/lib/libtorch_cuda.so"), "{beside:?}");
    assert!(
        cuda::backend().has_graphs(),
        "{:?}",
        cuda::backend().problem
    );
    if tch::Cuda::is_available() {
        return;
    }
    // Registered, not ATen's stand-in: asking for a CUDA tensor reaches the CUDA runtime, which
    // finds no driver, instead of "Cannot initialize CUDA without ATen_cuda library".
    let err =
        Tensor::f_zeros([1], (Kind::Float, Device::Cuda(0))).expect_err("no CUDA device here");
    assert!(!err.to_string().contains("without ATen_cuda"), "{err}");
}

#[test]
fn the_cuda_runtime_folder_is_named_for_this_builds_libtorch() {
    let folder = cuda::runtime_folder().expect("a data dir");
    assert!(
        folder.ends_with(format!("cuda-{}", cuda::TORCH_VERSION)),
        "{folder:?}"
    );
    assert!(
        cuda::TORCH_VERSION.starts_with("2."),
        "{}",
        cuda::TORCH_VERSION
    );
}
