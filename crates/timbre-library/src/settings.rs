//! Typed settings over the `settings` table; a key not stored takes its default.

use anyhow::{Context, Result};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

/// The user's settings, each stored by its field name; a missing one takes its default.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
#[serde(default)]
pub struct Settings {
    /// Retries for failures classified transient.
    pub max_retries: u32,
    /// First retry delay; doubles each attempt, capped by `retry_max_secs`.
    pub retry_base_secs: f64,
    /// Longest retry delay in seconds (0 to 86 400; default 300).
    pub retry_max_secs: f64,
    /// Workers running light-lane jobs in parallel (1 to 64; default 2).
    pub light_workers: usize,
    /// How often a running job's resources are sampled, in ms (10 to 60 000; default 1000).
    pub monitor_interval_ms: u64,
    /// Longest input audio accepted, in seconds (1 to 86 400; default 3 hours); longer is refused.
    pub max_import_duration_secs: f64,
    /// RAM use in percent above which a job raises an alert (1 to 100; default 90).
    pub alert_ram_percent: f64,
    /// GPU memory use in percent above which a job raises an alert (1 to 100; default 95).
    pub alert_gpu_memory_percent: f64,
    /// GPU temperature in °C above which a job raises an alert (30 to 120; default 85).
    pub alert_gpu_temperature_c: f64,
    /// Where HuBERT, RMVPE and other shared weights are (empty: see `models_folder`).
    pub models_dir: String,
    /// Memory for voice models and indexes kept loaded between conversions.
    pub model_cache_mb: u64,
    /// Where training, conversion and isolation run: `cpu`, `cuda:N`, or empty for the first
    /// GPU (see `devices`).
    pub device: String,
    /// Where dataset preparation and a training's data work run; empty: on `device`. Naming
    /// a second GPU lets a dataset be prepared while a model trains.
    pub extraction_device: String,
    /// Base URL the model catalogue's files are downloaded from instead of its own (a mirror
    /// of Hugging Face, say); empty: the catalogue's. `TIMBRE_DOWNLOAD_ENDPOINT` overrides it.
    pub download_endpoint: String,
    /// More base URLs, tried in order after the endpoint. HTTPS, or plain HTTP for a mirror on
    /// the local network. The HTTPS proxy comes from the environment (`HTTPS_PROXY`).
    pub download_mirrors: Vec<String>,
    /// A download attempt that receives fewer than `download_stall_bytes` in
    /// `download_stall_secs` has stalled: it stops, is tried again (resuming), then the next
    /// mirror is.
    pub download_stall_bytes: u64,
    /// The window for `download_stall_bytes`, in seconds (1 to 3600; default 60).
    pub download_stall_secs: f64,
    /// How much each of the checkpoint judge's scores counts in the recommended checkpoint.
    pub judge_weights: JudgeWeights,
    /// Where the app asks which release is newest: a signed manifest (`timbre_core::updates`).
    /// HTTPS; plain HTTP only on this machine.
    pub update_feed_url: String,
    /// Whether the app checks for updates at all; off, no request is made.
    pub update_check: bool,
}

/// The weight of each checkpoint score in the judge's weighted score (each 0 to 10, not all
/// 0); only their proportions matter. `timbre_core::train::judge` says what each score is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, ts_rs::TS)]
#[serde(default)]
pub struct JudgeWeights {
    /// Speaker similarity of the converted held-out speech.
    pub similarity: f64,
    /// Pitch fidelity (the RMSE in cents).
    pub pitch: f64,
    /// Voicing agreement.
    pub voicing: f64,
    /// Reconstruction (the held-out mel distance).
    pub reconstruction: f64,
    /// Freedom from buzz (the artefact score).
    pub artefacts: f64,
}

impl Default for JudgeWeights {
    fn default() -> Self {
        JudgeWeights {
            similarity: 4.0,
            pitch: 2.0,
            voicing: 1.0,
            reconstruction: 2.0,
            artefacts: 1.0,
        }
    }
}

impl JudgeWeights {
    fn check(&self) -> Result<()> {
        use crate::error::check_range;
        let all = [
            ("similarity", self.similarity),
            ("pitch", self.pitch),
            ("voicing", self.voicing),
            ("reconstruction", self.reconstruction),
            ("artefacts", self.artefacts),
        ];
        for (name, weight) in all {
            check_range(&format!("judge_weights.{name}"), weight, 0.0, 10.0)?;
        }
        if all.iter().all(|(_, weight)| *weight == 0.0) {
            return Err(crate::error::invalid_input(
                "judge_weights: at least one weight must be above 0",
            ));
        }
        Ok(())
    }
}

/// The project's stable update feed.
pub const DEFAULT_UPDATE_FEED: &str = "https://timbre.studio/updates/stable.json";

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_retries: 3,
            retry_base_secs: 2.0,
            retry_max_secs: 300.0,
            light_workers: 2,
            monitor_interval_ms: 1000,
            max_import_duration_secs: 3.0 * 3600.0,
            alert_ram_percent: 90.0,
            alert_gpu_memory_percent: 95.0,
            alert_gpu_temperature_c: 85.0,
            models_dir: String::new(),
            model_cache_mb: 4096,
            device: String::new(),
            extraction_device: String::new(),
            download_endpoint: String::new(),
            download_mirrors: Vec::new(),
            download_stall_bytes: 100_000,
            download_stall_secs: 60.0,
            judge_weights: JudgeWeights::default(),
            update_feed_url: DEFAULT_UPDATE_FEED.to_string(),
            update_check: true,
        }
    }
}

impl Settings {
    /// The stored settings over the defaults; fails when a stored value does not fit its setting.
    pub fn load(conn: &Connection) -> Result<Settings> {
        let mut merged = serde_json::to_value(Settings::default())?;
        for (key, value) in crate::db::settings::all(conn)? {
            if let Some(slot) = merged.get_mut(&key) {
                *slot = serde_json::from_str(&value).with_context(|| {
                    format!("setting {key} holds {value:?}, which is not valid")
                })?;
            }
        }
        serde_json::from_value(merged).context("reading settings")
    }

    /// Stores one setting after checking that the key exists and the value has its type. The
    /// value is JSON (`5`, `2.5`, `true`, `"cuda:1"`); text settings also take bare text.
    pub fn set(conn: &Connection, key: &str, value: &str) -> Result<Settings> {
        let mut merged = serde_json::to_value(Settings::load(conn)?)?;
        let slot = merged.get_mut(key).ok_or_else(|| {
            crate::error::invalid_input(format!("there is no setting named {key:?}"))
        })?;
        let parsed = match serde_json::from_str::<serde_json::Value>(value) {
            Ok(parsed) if parsed.is_string() || !slot.is_string() => parsed,
            _ if slot.is_string() => serde_json::Value::String(value.trim().to_string()),
            _ => {
                return Err(crate::error::invalid_input(format!(
                    "{value:?} is not a valid value for {key}"
                )));
            }
        };
        *slot = parsed.clone();
        let settings: Settings = serde_json::from_value(merged).map_err(|e| {
            crate::error::invalid_input(format!("{value:?} is not a valid value for {key}: {e}"))
        })?;
        match key {
            "device" => check_device_name(key, &settings.device)?,
            "extraction_device" => check_device_name(key, &settings.extraction_device)?,
            "download_endpoint" => check_download_url(key, &settings.download_endpoint)?,
            "download_mirrors" => {
                for mirror in &settings.download_mirrors {
                    check_download_url(key, mirror)?;
                }
            }
            "update_feed_url" if settings.update_feed_url.trim().is_empty() => {
                return Err(crate::error::invalid_input(format!(
                    "setting {key}: empty: give the feed's https:// URL, or turn update checks \
                     off with update_check false"
                )));
            }
            "update_feed_url" => check_download_url(key, &settings.update_feed_url)?,
            _ => settings.check_ranges()?,
        }
        crate::db::settings::put(conn, key, &parsed.to_string())?;
        Ok(settings)
    }

    /// Refuses numbers outside their ranges, naming the setting, the value and the range.
    fn check_ranges(&self) -> Result<()> {
        use crate::error::check_range;
        check_range("max_retries", self.max_retries, 0, 20)?;
        check_range("retry_base_secs", self.retry_base_secs, 0.0, 3600.0)?;
        check_range("retry_max_secs", self.retry_max_secs, 0.0, 86_400.0)?;
        check_range("light_workers", self.light_workers, 1, 64)?;
        check_range("monitor_interval_ms", self.monitor_interval_ms, 10, 60_000)?;
        check_range(
            "max_import_duration_secs",
            self.max_import_duration_secs,
            1.0,
            86_400.0,
        )?;
        check_range("alert_ram_percent", self.alert_ram_percent, 1.0, 100.0)?;
        check_range(
            "alert_gpu_memory_percent",
            self.alert_gpu_memory_percent,
            1.0,
            100.0,
        )?;
        check_range(
            "alert_gpu_temperature_c",
            self.alert_gpu_temperature_c,
            30.0,
            120.0,
        )?;
        check_range("model_cache_mb", self.model_cache_mb, 0, 1 << 20)?;
        check_range(
            "download_stall_bytes",
            self.download_stall_bytes,
            1,
            1 << 30,
        )?;
        check_range("download_stall_secs", self.download_stall_secs, 1.0, 3600.0)?;
        self.judge_weights.check()
    }

    /// Seconds to wait before retry `attempt` (0 for the first): `retry_base_secs` doubled per
    /// attempt, capped at `retry_max_secs`.
    pub fn retry_delay_secs(&self, attempt: u32) -> f64 {
        (self.retry_base_secs * 2f64.powi(attempt as i32)).min(self.retry_max_secs)
    }
}

/// A download base URL: empty (none), or an `http://` or `https://` URL with a host. Anything
/// else (`file:///etc`, a bare path) would be fetched from nowhere the downloads can reach.
fn check_download_url(key: &str, value: &str) -> Result<()> {
    let url = value.trim();
    if url.is_empty() {
        return Ok(());
    }
    let host = ["https://", "http://"].iter().find_map(|scheme| {
        url.get(..scheme.len())
            .filter(|start| start.eq_ignore_ascii_case(scheme))
            .map(|_| &url[scheme.len()..])
    });
    match host {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(()),
        _ => Err(crate::error::invalid_input(format!(
            "setting {key}: {url:?} is not an http:// or https:// URL with a host"
        ))),
    }
}

/// A device setting's value: empty (automatic), `cpu`, `cuda`, `gpu`, `cuda:N` or `mps`.
/// Whether libtorch sees that device is known only above the library (`timbre_core::devices`),
/// where a job that uses a device that is not there fails naming the setting.
fn check_device_name(key: &str, value: &str) -> Result<()> {
    let name = value.trim().to_ascii_lowercase();
    let known = matches!(name.as_str(), "" | "cpu" | "cuda" | "gpu" | "mps")
        || name
            .strip_prefix("cuda:")
            .is_some_and(|index| index.parse::<usize>().is_ok());
    if known {
        Ok(())
    } else {
        Err(crate::error::invalid_input(format!(
            "setting {key}: unknown device `{name}`: use cpu, cuda, cuda:N or mps"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_overrides_and_validation() {
        let conn = crate::db::open_in_memory();
        assert_eq!(Settings::load(&conn).unwrap(), Settings::default());
        assert_eq!(
            Settings::set(&conn, "max_retries", "5")
                .unwrap()
                .max_retries,
            5
        );
        assert_eq!(Settings::load(&conn).unwrap().max_retries, 5);
        assert!(Settings::set(&conn, "max_retries", "\"many\"").is_err());
        assert!(Settings::set(&conn, "nope", "1").is_err());
        let unknown = Settings::set(&conn, "extraction_device", "tpu").unwrap_err();
        assert!(
            format!("{unknown:#}").contains("setting extraction_device: unknown device `tpu`"),
            "{unknown:#}"
        );
        Settings::set(&conn, "extraction_device", "cuda:1").unwrap();
        let set = Settings::set(&conn, "extraction_device", "\"cpu\"").unwrap();
        assert_eq!(set.extraction_device, "cpu");
        Settings::set(&conn, "device", " cpu ").unwrap();
        assert_eq!(Settings::load(&conn).unwrap().device, "cpu");
    }

    #[test]
    fn download_urls_are_http_or_https_with_a_host() {
        let conn = crate::db::open_in_memory();
        for (key, value) in [
            ("download_endpoint", "file:///etc"),
            ("download_endpoint", "/etc"),
            ("download_endpoint", "https://"),
            ("download_endpoint", "http:///x"),
            (
                "download_mirrors",
                r#"["https://hf-mirror.com", "ftp://mirror"]"#,
            ),
        ] {
            let err = Settings::set(&conn, key, value).unwrap_err();
            let message = format!("{err:#}");
            assert!(
                message.starts_with(&format!("setting {key}: "))
                    && message.contains("not an http:// or https:// URL"),
                "{key} = {value}: {message}"
            );
        }
        assert_eq!(Settings::load(&conn).unwrap(), Settings::default());
        let set = Settings::set(&conn, "download_endpoint", "HTTPS://hf-mirror.com/").unwrap();
        assert_eq!(set.download_endpoint, "HTTPS://hf-mirror.com/");
        Settings::set(
            &conn,
            "download_mirrors",
            r#"["http://192.168.1.2:8080/hf"]"#,
        )
        .unwrap();
        Settings::set(&conn, "download_endpoint", "").unwrap();
    }

    #[test]
    fn the_update_feed_is_a_url_and_checks_can_be_turned_off() {
        let conn = crate::db::open_in_memory();
        let defaults = Settings::load(&conn).unwrap();
        assert_eq!(defaults.update_feed_url, DEFAULT_UPDATE_FEED);
        assert!(defaults.update_check);
        for value in ["", "  ", "ftp://x/feed.json", "/feed.json"] {
            let err = Settings::set(&conn, "update_feed_url", value).unwrap_err();
            assert!(
                format!("{err:#}").starts_with("setting update_feed_url: "),
                "{value}: {err:#}"
            );
        }
        let set = Settings::set(&conn, "update_feed_url", "http://127.0.0.1:8/s.json").unwrap();
        assert_eq!(set.update_feed_url, "http://127.0.0.1:8/s.json");
        assert!(
            !Settings::set(&conn, "update_check", "false")
                .unwrap()
                .update_check
        );
        assert!(Settings::set(&conn, "update_check", "\"no\"").is_err());
        assert!(!Settings::load(&conn).unwrap().update_check);
    }

    #[test]
    fn numbers_outside_their_ranges_are_refused_and_not_stored() {
        let conn = crate::db::open_in_memory();
        assert!(Settings::default().check_ranges().is_ok());
        for (key, value, range) in [
            (
                "max_import_duration_secs",
                "-1",
                "between 1 and 86400, not -1",
            ),
            ("alert_ram_percent", "500", "between 1 and 100, not 500"),
            ("light_workers", "0", "between 1 and 64, not 0"),
            ("retry_base_secs", "-1", "between 0 and 3600, not -1"),
            ("monitor_interval_ms", "0", "between 10 and 60000, not 0"),
            ("download_stall_secs", "0", "between 1 and 3600, not 0"),
            (
                "download_stall_bytes",
                "0",
                "between 1 and 1073741824, not 0",
            ),
        ] {
            let err = Settings::set(&conn, key, value).unwrap_err().to_string();
            assert_eq!(err, format!("{key} must be {range}"));
        }
        assert_eq!(Settings::load(&conn).unwrap(), Settings::default());
        let set = Settings::set(&conn, "light_workers", "4").unwrap();
        assert_eq!(set.light_workers, 4);
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let s = Settings {
            retry_base_secs: 1.0,
            retry_max_secs: 5.0,
            ..Settings::default()
        };
        let delays: Vec<f64> = (0..4).map(|a| s.retry_delay_secs(a)).collect();
        assert_eq!(delays, vec![1.0, 2.0, 4.0, 5.0]);
    }
}
