//! Where the models run: the first CUDA device when libtorch sees one, else the CPU.
//! `TIMBRE_DEVICE=cpu` (or `cuda:N`) overrides the choice.

use anyhow::{Result, bail};
use tch::Device;

pub fn default_device() -> Result<Device> {
    match std::env::var("TIMBRE_DEVICE") {
        Ok(name) => parse_device(&name),
        Err(_) => Ok(if tch::Cuda::is_available() {
            Device::Cuda(0)
        } else {
            Device::Cpu
        }),
    }
}

pub fn parse_device(name: &str) -> Result<Device> {
    let name = name.trim().to_ascii_lowercase();
    if name == "cpu" {
        return Ok(Device::Cpu);
    }
    let index = match name.as_str() {
        "cuda" | "gpu" => 0,
        _ => match name
            .strip_prefix("cuda:")
            .and_then(|i| i.parse::<usize>().ok())
        {
            Some(i) => i,
            None => bail!("unknown device `{name}`: use cpu, cuda or cuda:N"),
        },
    };
    if index >= tch::Cuda::device_count() as usize {
        bail!(
            "device `{name}` asked for, but libtorch sees {} CUDA device(s)",
            tch::Cuda::device_count()
        );
    }
    Ok(Device::Cuda(index))
}

/// Keeps oneDNN (libtorch's CPU convolutions) from caching a compiled kernel per input shape.
/// Every segment of a long input has its own length, so with the default cache (1024 kernels)
/// each segment added about 1.3 GB with the fixture models, and a long conversion grew without
/// bound; without it, memory is one segment's, and the speed the same (measured on 4 minutes).
/// oneDNN reads `ONEDNN_PRIMITIVE_CACHE_CAPACITY` once, at its first convolution: call this
/// before any model runs and before any other thread starts (the binaries' `main` does). A value
/// the user set is kept.
pub fn limit_kernel_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        const VAR: &str = "ONEDNN_PRIMITIVE_CACHE_CAPACITY";
        if std::env::var_os(VAR).is_none() {
            // SAFETY: called first thing in `main`, while the process has one thread.
            unsafe { std::env::set_var(VAR, "0") };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_and_rejects_unknown_names() {
        assert_eq!(parse_device("CPU").unwrap(), Device::Cpu);
        assert!(
            parse_device("tpu")
                .unwrap_err()
                .to_string()
                .contains("unknown device")
        );
    }
}
