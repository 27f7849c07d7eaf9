//! Which device each kind of work runs on. The main device trains, converts and isolates; the
//! extraction device runs dataset preparation (HuBERT, RMVPE, the isolation of pieces) and a
//! training's data work (its spectrograms). On one GPU, or none, both are the same device: the
//! `device` setting, else `TIMBRE_DEVICE`, else the first CUDA device or the CPU. On a machine
//! with two GPUs the `extraction_device` setting names the other one, and the job system then
//! runs preparations beside a training instead of after it.

use anyhow::Result;
use serde::Serialize;
use tch::Device;
use timbre_nn::device::{default_device, parse_device};

use crate::settings::Settings;

/// The devices work runs on, as the settings resolve them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Devices {
    /// Where training, conversion and isolation run.
    pub main: Device,
    /// Where dataset preparation and a training's data work run; the main device unless set apart.
    pub extraction: Device,
}

impl Devices {
    /// The devices the settings name; an unknown or absent device is refused with the setting's
    /// name, so that a job says what to change.
    pub fn of(settings: &Settings) -> Result<Devices> {
        let main = match settings.device.trim() {
            "" => default_device()?,
            name => parse_setting("device", name)?,
        };
        let extraction = match settings.extraction_device.trim() {
            "" => main,
            name => parse_setting("extraction_device", name)?,
        };
        Ok(Devices { main, extraction })
    }

    /// Whether extraction has a device of its own.
    pub fn split(&self) -> bool {
        self.main != self.extraction
    }
}

/// The devices to choose from and what the settings resolve to, for the app's settings.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct DeviceReport {
    /// `cpu`, then `cuda:0`, `cuda:1`… as libtorch sees them, then `mps` where it has MPS.
    pub available: Vec<String>,
    /// The settings as stored (empty: automatic).
    pub device: String,
    /// The `extraction_device` setting as stored (empty: the main device).
    pub extraction_device: String,
    /// What they resolve to, unless a set device is missing (then `problem` says so).
    pub main: Option<String>,
    /// The extraction device it resolves to (`cpu`, `cuda:N`, `mps`); None when `problem` is set.
    pub extraction: Option<String>,
    /// Why the settings do not resolve (a device libtorch does not see); None when they do.
    pub problem: Option<String>,
}

/// The devices libtorch sees and what the settings resolve to; a bad setting goes in `problem`.
pub fn report(settings: &Settings) -> DeviceReport {
    let cuda = (0..tch::Cuda::device_count()).map(|i| name(Device::Cuda(i as usize)));
    // `mps` last, where libtorch has it (a macOS build on a Metal GPU).
    let mps = tch::utils::has_mps().then(|| name(Device::Mps));
    let resolved = Devices::of(settings);
    DeviceReport {
        available: std::iter::once("cpu".to_string())
            .chain(cuda)
            .chain(mps)
            .collect(),
        device: settings.device.clone(),
        extraction_device: settings.extraction_device.clone(),
        main: resolved.as_ref().ok().map(|d| name(d.main)),
        extraction: resolved.as_ref().ok().map(|d| name(d.extraction)),
        problem: resolved.err().map(|e| format!("{e:#}")),
    }
}

fn parse_setting(key: &str, name: &str) -> Result<Device> {
    parse_device(name).map_err(|e| crate::error::invalid_input(format!("setting {key}: {e:#}")))
}

/// How the library and the CLI write a device: `cpu`, `cuda:N` or `mps`.
pub fn name(device: Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(index) => format!("cuda:{index}"),
        Device::Mps => "mps".into(),
        // Never parsed from a setting (`parse_device` has no `vulkan`); named for what it is.
        Device::Vulkan => "vulkan".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(device: &str, extraction: &str) -> Settings {
        Settings {
            device: device.into(),
            extraction_device: extraction.into(),
            ..Settings::default()
        }
    }

    #[test]
    fn extraction_follows_the_main_device_unless_set() {
        let devices = Devices::of(&settings("cpu", "")).unwrap();
        assert_eq!(devices.main, Device::Cpu);
        assert_eq!(devices.extraction, Device::Cpu);
        assert!(!devices.split());
        assert!(!Devices::of(&settings("cpu", " CPU ")).unwrap().split());
        assert_eq!(name(devices.main), "cpu");
        let report = report(&settings("cpu", ""));
        assert_eq!(report.available[0], "cpu");
        assert_eq!(
            report.available.len() as i64,
            1 + tch::Cuda::device_count() + i64::from(tch::utils::has_mps())
        );
        assert_eq!(
            (report.main.as_deref(), report.extraction.as_deref()),
            (Some("cpu"), Some("cpu"))
        );
        assert_eq!(report.problem, None);
        assert_eq!(name(Device::Cuda(1)), "cuda:1");
        assert_eq!(name(Device::Mps), "mps");
        assert_eq!(
            report.available.contains(&"mps".to_string()),
            tch::utils::has_mps()
        );
    }

    #[test]
    fn a_device_libtorch_does_not_see_is_refused_naming_the_setting() {
        let count = tch::Cuda::device_count();
        let absent = format!("cuda:{count}");
        let error = Devices::of(&settings("cpu", &absent)).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains("setting extraction_device"), "{message}");
        assert!(message.contains(&absent), "{message}");
        assert!(Devices::of(&settings("tpu", "")).is_err());
        assert!(Devices::of(&settings(" ", "")).is_ok());
        assert_eq!(
            crate::error::kind_of(&error),
            crate::error::ErrorKind::InvalidInput
        );
    }
}
