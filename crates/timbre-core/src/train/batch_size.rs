//! How many pieces a training step takes: the request's, else a first guess from the GPU's free
//! memory (4 on the CPU, RVC's default), halved whenever a step runs out of memory.

use tch::Device;

/// Measured on an H100: a v1 40k model in fp16 peaked at 10.6 GB at batch 32 (0.3 GB a piece
/// over the model and optimizers); a gigabyte leaves room for 48k's longer slices and fp32. RVC
/// guesses twice that per piece on the card's total memory. Too high a guess costs a halving.
const BYTES_PER_ITEM: u64 = 1 << 30;
/// RVC's interface offers up to 40; beyond 32 the steps gain nothing on one GPU.
const MAX_AUTOMATIC: u64 = 32;
const CPU_BATCH: i64 = 4;

/// The batch size to start with on `device`, with `free_bytes` of its memory free (None when
/// the driver cannot say).
pub fn automatic(device: Device, free_bytes: Option<u64>) -> i64 {
    match (device, free_bytes) {
        (Device::Cuda(_), Some(free)) => (free / BYTES_PER_ITEM).clamp(1, MAX_AUTOMATIC) as i64,
        _ => CPU_BATCH,
    }
}

/// The free memory of CUDA device `index`, from the driver.
pub fn free_gpu_memory(index: usize) -> Option<u64> {
    let snapshot = crate::monitor::ResourceMonitor::new().snapshot();
    let gpu = snapshot.gpus.get(index)?;
    Some(gpu.memory_total_bytes.saturating_sub(gpu.memory_used_bytes))
}

/// Whether a failed step ran out of memory: libtorch said so (see `crate::torch_errors`).
pub fn is_out_of_memory(error: &anyhow::Error) -> bool {
    crate::error::kind_of(error) == crate::ErrorKind::OutOfMemory
}

/// The batch size after a step of `current` ran out of memory; an error when one piece at a
/// time was already too much.
pub fn halved(current: i64) -> anyhow::Result<i64> {
    if current <= 1 {
        // Not typed out of memory, so that the job system does not retry it with a smaller
        // batch: there is none. The allocator's message is in the job's events.
        return Err(crate::error::invalid_input(
            "the device has too little memory to train even one piece at a time: close other \
             programs that use it, or train on the CPU (TIMBRE_DEVICE=cpu)",
        ));
    }
    Ok(current / 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::anyhow;

    #[test]
    fn the_guess_follows_free_gpu_memory_and_is_4_on_the_cpu() {
        let gib = 1u64 << 30;
        assert_eq!(automatic(Device::Cpu, Some(80 * gib)), 4);
        assert_eq!(automatic(Device::Cuda(0), None), 4);
        assert_eq!(automatic(Device::Cuda(0), Some(7 * gib + gib / 2)), 7);
        assert_eq!(automatic(Device::Cuda(0), Some(gib / 2)), 1);
        assert_eq!(automatic(Device::Cuda(0), Some(140 * gib)), 32);
    }

    #[test]
    fn out_of_memory_halves_down_to_one_then_fails_clearly() {
        assert!(is_out_of_memory(&crate::error::out_of_memory(
            "CUDA out of memory. Tried to allocate 2.00 GiB"
        )));
        assert!(is_out_of_memory(
            &crate::error::out_of_memory("DefaultCPUAllocator: can't allocate memory")
                .context("step")
        ));
        assert!(!is_out_of_memory(&anyhow!("shape mismatch")));
        assert!(!is_out_of_memory(&anyhow!(
            "dataset/out of memory.wav: bad"
        )));
        let sizes: Vec<i64> = std::iter::successors(Some(12), |&b| halved(b).ok()).collect();
        assert_eq!(sizes, [12, 6, 3, 1]);
        let err = halved(1).unwrap_err();
        assert!(err.to_string().contains("even one piece"), "{err}");
        assert_eq!(
            crate::jobs::classify(&err),
            crate::jobs::Failure::Permanent,
            "the job system must not retry it"
        );
    }
}
