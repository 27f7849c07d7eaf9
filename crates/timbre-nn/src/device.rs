//! Where the models run: the first CUDA device when libtorch sees one, else the CPU.
//! `TIMBRE_DEVICE=cpu` (or `cuda:N`, or `mps` on a macOS libtorch) overrides the choice; MPS is
//! never chosen by itself. And in what precision: float32 on the CPU and on MPS, float16 on
//! CUDA as RVC and the RoFormer inference code do; `TIMBRE_PRECISION=fp32` (or `fp16`, `bf16`)
//! overrides it.

use anyhow::{Result, bail};
use tch::Device;

/// The device the models run on: `TIMBRE_DEVICE` when set, else CUDA device 0 when libtorch sees
/// one, else the CPU.
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

/// Parses `cpu`, `cuda` or `gpu` (device 0), `cuda:N` or `mps` (Apple's Metal GPU),
/// case-insensitive; fails for a CUDA device libtorch does not see, and for `mps` where
/// libtorch has no MPS backend (`tch::utils::has_mps`: only macOS builds have one, and only on
/// macOS 12.3 or later with a Metal GPU).
pub fn parse_device(name: &str) -> Result<Device> {
    let name = name.trim().to_ascii_lowercase();
    if name == "cpu" {
        return Ok(Device::Cpu);
    }
    if name == "mps" {
        if !tch::utils::has_mps() {
            bail!(
                "device `mps` asked for, but this libtorch build has no MPS (Apple's Metal GPU, \
                 which only macOS builds have): use cpu, cuda or cuda:N"
            );
        }
        return Ok(Device::Mps);
    }
    let index = match name.as_str() {
        "cuda" | "gpu" => 0,
        _ => match name
            .strip_prefix("cuda:")
            .and_then(|i| i.parse::<usize>().ok())
        {
            Some(i) => i,
            None => bail!("unknown device `{name}`: use cpu, cuda, cuda:N or mps"),
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

/// The arithmetic the models run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// float32 throughout (`fp32`).
    Float32,
    /// float16 matrix products under CUDA autocast (`fp16`); CUDA only.
    Float16,
    /// bfloat16 (`bf16`), for models that cast their weights whole; conversion refuses it.
    BFloat16,
}

impl Precision {
    /// Float16 on CUDA, float32 on the CPU (where half-precision kernels are slower) and on
    /// MPS (tch's autocast is CUDA's, so fp16 conversion has no MPS mode), unless
    /// `TIMBRE_PRECISION` says otherwise.
    pub fn default_for(device: Device) -> Result<Precision> {
        match std::env::var("TIMBRE_PRECISION") {
            Ok(name) => Precision::parse(&name),
            Err(_) if device.is_cuda() => Ok(Precision::Float16),
            Err(_) => Ok(Precision::Float32),
        }
    }

    /// Parses `fp32`/`float32`, `fp16`/`float16`/`half` or `bf16`/`bfloat16`, case-insensitive.
    pub fn parse(name: &str) -> Result<Precision> {
        match name.trim().to_ascii_lowercase().as_str() {
            "fp32" | "float32" => Ok(Precision::Float32),
            "fp16" | "float16" | "half" => Ok(Precision::Float16),
            "bf16" | "bfloat16" => Ok(Precision::BFloat16),
            other => bail!("unknown precision `{other}`: use fp32, fp16 or bf16"),
        }
    }

    /// The short name: `fp32`, `fp16` or `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Float32 => "fp32",
            Precision::Float16 => "fp16",
            Precision::BFloat16 => "bf16",
        }
    }

    /// The dtype weights are stored in by models that cast them whole (the separators).
    pub fn weight_kind(self) -> tch::Kind {
        match self {
            Precision::Float32 => tch::Kind::Float,
            Precision::Float16 => tch::Kind::Half,
            Precision::BFloat16 => tch::Kind::BFloat16,
        }
    }

    /// Runs `f` in this precision with float32 weights: float16 is libtorch's CUDA autocast
    /// (convolutions and matrix products in float16; norms, softmax and reductions in float32,
    /// so nothing overflows where RVC's whole-model `.half()` can). tch's autocast is CUDA's
    /// and has no bfloat16 mode, so both are refused where they cannot run.
    pub fn autocast<T>(self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        match self {
            Precision::Float32 => f(),
            Precision::Float16 if tch::Cuda::is_available() => tch::autocast(true, f),
            Precision::Float16 => {
                bail!("fp16 conversion runs on CUDA only: use fp32 on the CPU or MPS")
            }
            Precision::BFloat16 => {
                bail!("bf16 is not available for conversion: use fp16 or fp32 (TIMBRE_PRECISION)")
            }
        }
    }
}

/// Sets oneDNN's options (libtorch's CPU convolutions) in the environment, where it reads them
/// once, at its first convolution; a variable the user set is kept.
///
/// - No cache of a compiled kernel per input shape (`ONEDNN_PRIMITIVE_CACHE_CAPACITY=0`): every
///   segment of a long input has its own length, so with the default cache (1024 kernels) each
///   segment added about 1.3 GB with the fixture models, and a long conversion grew without
///   bound. A cache pays only when the same shapes run again: a process's first synthesis takes
///   as long with it as without (docs/PERFORMANCE.md, "Every CPU").
/// - On AMD's Zen 4 (family 19h with AVX-512), which runs a 512-bit instruction as two 256-bit
///   halves, oneDNN's AVX2 kernels (`ONEDNN_MAX_CPU_ISA=AVX2`): its first synthesis in a process
///   took 20.4–21.1 s against 23.2–23.6 s with its AVX-512 ones. Intel's AVX-512 cores and
///   Zen 5's full-width units keep theirs.
///
/// # Safety
///
/// Setting an environment variable races with any other thread reading or writing the
/// environment. Call this first thing in `main`, while the process has one thread, before any
/// model runs.
pub unsafe fn set_cpu_kernel_options() {
    let mut options = vec![("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0")];
    if Cpu::detect().is_some_and(|cpu| cpu.prefers_avx2_kernels()) {
        options.push(("ONEDNN_MAX_CPU_ISA", "AVX2"));
    }
    for (name, value) in options {
        if std::env::var_os(name).is_none() {
            // SAFETY: the caller guarantees the process has one thread.
            unsafe { std::env::set_var(name, value) };
        }
    }
}

/// What [`set_cpu_kernel_options`] needs to know of the CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cpu {
    amd: bool,
    /// The display family (base family plus extended family, as AMD numbers them: 19h is Zen 3
    /// and Zen 4).
    family: u32,
    avx512: bool,
}

impl Cpu {
    #[cfg(target_arch = "x86_64")]
    fn detect() -> Option<Self> {
        use std::arch::x86_64::__cpuid;
        let (vendor, signature) = (__cpuid(0), __cpuid(1));
        let name: Vec<u8> = [vendor.ebx, vendor.edx, vendor.ecx]
            .iter()
            .flat_map(|word| word.to_le_bytes())
            .collect();
        let base = (signature.eax >> 8) & 0xf;
        let extended = (signature.eax >> 20) & 0xff;
        Some(Self {
            amd: name == b"AuthenticAMD",
            family: if base == 0xf { base + extended } else { base },
            avx512: std::arch::is_x86_feature_detected!("avx512f"),
        })
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn detect() -> Option<Self> {
        None
    }

    fn prefers_avx2_kernels(self) -> bool {
        self.amd && self.family == 0x19 && self.avx512
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_precisions_and_rejects_unknown_names() {
        assert_eq!(Precision::parse(" FP16").unwrap(), Precision::Float16);
        assert_eq!(Precision::parse("bfloat16").unwrap(), Precision::BFloat16);
        assert_eq!(
            Precision::parse("fp32").unwrap().weight_kind(),
            tch::Kind::Float
        );
        assert!(Precision::parse("int8").is_err());
    }

    #[test]
    fn only_zen_4_takes_avx2_kernels() {
        let zen4 = Cpu {
            amd: true,
            family: 0x19,
            avx512: true,
        };
        assert!(zen4.prefers_avx2_kernels());
        let zen3 = Cpu {
            avx512: false,
            ..zen4
        };
        let zen5 = Cpu {
            family: 0x1a,
            ..zen4
        };
        let intel = Cpu { amd: false, ..zen4 };
        for cpu in [zen3, zen5, intel] {
            assert!(!cpu.prefers_avx2_kernels(), "{cpu:?}");
        }
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn reads_this_cpu() {
        let cpu = Cpu::detect().unwrap();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        assert_eq!(cpu.amd, cpuinfo.contains("AuthenticAMD"));
        assert_eq!(cpu.avx512, cpuinfo.contains(" avx512f"));
        let family = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("cpu family"))
            .and_then(|rest| {
                rest.trim_start_matches([' ', '\t', ':'])
                    .parse::<u32>()
                    .ok()
            })
            .unwrap();
        assert_eq!(cpu.family, family);
    }

    #[test]
    fn parses_cpu_and_rejects_unknown_names() {
        assert_eq!(parse_device("CPU").unwrap(), Device::Cpu);
        assert_eq!(parse_device(" cpu ").unwrap(), Device::Cpu);
        for unknown in ["tpu", "cuda:x", "cuda:-1", "metal"] {
            let err = parse_device(unknown).unwrap_err().to_string();
            assert!(
                err.contains("unknown device") && err.ends_with("use cpu, cuda, cuda:N or mps"),
                "{unknown}: {err}"
            );
        }
    }

    #[test]
    fn cuda_names_resolve_to_a_device_libtorch_sees_or_are_refused() {
        let count = tch::Cuda::device_count() as usize;
        for (name, index) in [
            ("cuda", 0),
            ("GPU", 0),
            ("cuda:0", 0),
            ("Cuda:1", 1),
            ("cuda:7", 7),
        ] {
            match parse_device(name) {
                Ok(device) => {
                    assert!(
                        index < count,
                        "{name}: {device:?} with {count} CUDA device(s)"
                    );
                    assert_eq!(device, Device::Cuda(index), "{name}");
                }
                Err(err) => {
                    assert!(index >= count, "{name}: {err}");
                    assert!(
                        err.to_string()
                            .contains(&format!("libtorch sees {count} CUDA device(s)")),
                        "{name}: {err}"
                    );
                }
            }
        }
    }

    /// This Linux libtorch has no MPS backend, so `mps` is refused saying why.
    #[cfg(not(target_os = "macos"))]
    #[test]
    fn mps_is_refused_where_libtorch_has_no_mps() {
        assert!(!tch::utils::has_mps());
        for name in ["mps", " MPS "] {
            let err = parse_device(name).unwrap_err().to_string();
            assert_eq!(
                err,
                "device `mps` asked for, but this libtorch build has no MPS (Apple's Metal GPU, \
                 which only macOS builds have): use cpu, cuda or cuda:N",
                "{name}"
            );
        }
    }

    /// On a macOS libtorch with MPS, `mps` is Apple's GPU, and runs in float32 by default.
    #[cfg(target_os = "macos")]
    #[test]
    fn mps_is_the_metal_gpu_where_libtorch_has_it() {
        match parse_device("mps") {
            Ok(device) => {
                assert!(tch::utils::has_mps());
                assert_eq!(device, Device::Mps);
            }
            Err(err) => {
                assert!(!tch::utils::has_mps());
                assert!(err.to_string().contains("has no MPS"), "{err}");
            }
        }
    }

    #[test]
    fn mps_and_the_cpu_default_to_float32_and_cuda_to_float16() {
        if std::env::var_os("TIMBRE_PRECISION").is_some() {
            return;
        }
        assert_eq!(
            Precision::default_for(Device::Cpu).unwrap(),
            Precision::Float32
        );
        assert_eq!(
            Precision::default_for(Device::Mps).unwrap(),
            Precision::Float32
        );
        assert_eq!(
            Precision::default_for(Device::Cuda(0)).unwrap(),
            Precision::Float16
        );
    }
}
