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
