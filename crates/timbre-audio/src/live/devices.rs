//! Device naming shared by recording and live conversion, and the listing of both directions.

use cpal::traits::{DeviceTrait, HostTrait};

use crate::error::{AudioError, AudioErrorKind};
use crate::record::InputDevice;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Input,
    Output,
}

impl Direction {
    fn word(self) -> &'static str {
        match self {
            Direction::Input => "input",
            Direction::Output => "output",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
/// A playback device and its default format.
pub struct OutputDevice {
    /// Pass this back as `SessionConfig::output` or `monitor` to play on the device.
    pub name: String,
    /// Whether this is the host's default output device.
    pub is_default: bool,
    /// Channel count of the device's default configuration.
    pub channels: u16,
    /// Sample rate of the device's default configuration, in Hz.
    pub sample_rate: u32,
}

/// The audio host: PulseAudio when its server is reachable, else ALSA. cpal's `default_host`
/// gives PulseAudio one try of up to 2 s and then quietly takes ALSA, whose devices have other
/// names and rates; a loaded machine can miss that one try, so a server that is there gets
/// three.
pub(crate) fn audio_host() -> cpal::Host {
    if cpal::available_hosts().contains(&cpal::HostId::PulseAudio) {
        for _ in 0..3 {
            if let Ok(host) = cpal::host_from_id(cpal::HostId::PulseAudio) {
                return host;
            }
        }
    }
    cpal::default_host()
}

pub(crate) fn device_error(detail: impl Into<String>) -> AudioError {
    AudioError::new(AudioErrorKind::Device, None, detail)
}

pub(crate) fn device_id(device: &cpal::Device) -> String {
    device
        .id()
        .map(|id| id.id().to_string())
        .unwrap_or_default()
}

fn default_device(host: &cpal::Host, direction: Direction) -> Option<cpal::Device> {
    match direction {
        Direction::Input => host.default_input_device(),
        Direction::Output => host.default_output_device(),
    }
}

pub(crate) fn default_config(
    device: &cpal::Device,
    direction: Direction,
) -> Result<cpal::SupportedStreamConfig, cpal::Error> {
    match direction {
        Direction::Input => device.default_input_config(),
        Direction::Output => device.default_output_config(),
    }
}

/// Devices of one direction with unique display names: the description, plus the id when two
/// devices share a description (ALSA's `hw:` and `plughw:` entries do). The host's default
/// device is added when the backend does not enumerate it (ALSA lists only devices that carry a
/// hint).
pub(crate) fn named_devices(
    host: &cpal::Host,
    direction: Direction,
) -> Result<Vec<(String, cpal::Device)>, AudioError> {
    let listed = match direction {
        Direction::Input => host.input_devices(),
        Direction::Output => host.output_devices(),
    };
    let mut devices: Vec<cpal::Device> = listed
        .map_err(|e| device_error(format!("could not list {} devices: {e}", direction.word())))?
        .collect();
    if let Some(default) = default_device(host, direction)
        && !devices.iter().any(|d| device_id(d) == device_id(&default))
    {
        devices.insert(0, default);
    }
    let descriptions: Vec<String> = devices
        .iter()
        .map(|d| {
            d.description()
                .map_or_else(|_| device_id(d), |desc| desc.name().to_string())
        })
        .collect();
    Ok(devices
        .into_iter()
        .zip(&descriptions)
        .map(|(device, desc)| {
            let shared = descriptions.iter().filter(|d| *d == desc).count() > 1;
            let name = if shared {
                format!("{desc} ({})", device_id(&device))
            } else {
                desc.clone()
            };
            (name, device)
        })
        .collect())
}

/// The device named `wanted` (a name from the listing or a backend id), or the default one.
pub(crate) fn find_device(
    host: &cpal::Host,
    direction: Direction,
    wanted: Option<&str>,
) -> Result<cpal::Device, AudioError> {
    let word = direction.word();
    match wanted {
        None => default_device(host, direction)
            .ok_or_else(|| device_error(format!("no {word} device was found"))),
        Some(wanted) => named_devices(host, direction)?
            .into_iter()
            .find(|(name, device)| name == wanted || device_id(device) == wanted)
            .map(|(_, device)| device)
            .ok_or_else(|| device_error(format!("no {word} device named \"{wanted}\""))),
    }
}

/// (name, is_default, channels, default rate) of each device of `direction` that reports a
/// default configuration.
fn list(direction: Direction) -> Result<Vec<(String, bool, u16, u32)>, AudioError> {
    let host = audio_host();
    let default_id = default_device(&host, direction).map(|d| device_id(&d));
    Ok(named_devices(&host, direction)?
        .into_iter()
        .filter_map(|(name, device)| {
            let config = default_config(&device, direction).ok()?;
            let is_default = Some(device_id(&device)) == default_id;
            Some((name, is_default, config.channels(), config.sample_rate()))
        })
        .collect())
}

/// Devices that can capture, with their default format.
pub fn list_input_devices() -> Result<Vec<InputDevice>, AudioError> {
    Ok(list(Direction::Input)?
        .into_iter()
        .map(|(name, is_default, channels, sample_rate)| InputDevice {
            name,
            is_default,
            channels,
            sample_rate,
        })
        .collect())
}

/// Devices that can play, with their default format.
pub fn list_output_devices() -> Result<Vec<OutputDevice>, AudioError> {
    Ok(list(Direction::Output)?
        .into_iter()
        .map(|(name, is_default, channels, sample_rate)| OutputDevice {
            name,
            is_default,
            channels,
            sample_rate,
        })
        .collect())
}
