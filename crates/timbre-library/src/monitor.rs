//! Resource monitor: CPU and RAM through sysinfo, NVIDIA GPUs through NVML when a driver is
//! present (silently none when not).

use crate::settings::Settings;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use sysinfo::{Pid, ProcessesToUpdate, System};

/// One NVIDIA GPU's state at a moment, read through NVML.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct GpuSnapshot {
    /// The device's name, or `GPU <index>` when NVML gives none.
    pub name: String,
    /// Device memory in use, in bytes.
    pub memory_used_bytes: u64,
    /// Device memory in all, in bytes.
    pub memory_total_bytes: u64,
    /// GPU utilisation over NVML's last sample period, 0 to 100; 0 when unreadable.
    pub utilization_percent: f64,
    /// GPU temperature in degrees Celsius; 0 when unreadable.
    pub temperature_c: f64,
}

/// The machine's resources at a moment; zeros where they cannot be read.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct ResourceSnapshot {
    /// CPU usage across all cores, 0 to 100, since the previous snapshot.
    pub cpu_percent: f64,
    /// RAM in use on the machine, in bytes.
    pub ram_used_bytes: u64,
    /// RAM on the machine, in bytes.
    pub ram_total_bytes: u64,
    /// Resident memory of this process, in bytes.
    pub process_rss_bytes: u64,
    /// One entry per NVIDIA GPU, in NVML order; empty without a driver.
    pub gpus: Vec<GpuSnapshot>,
}

/// A resource over its alert threshold, reported as a job's `alert` event.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Alert {
    /// The metric: `ram_percent`, `gpu<i>_memory_percent` or `gpu<i>_temperature_c`.
    pub metric: String,
    /// Its value: percent, or degrees Celsius for a temperature.
    pub value: f64,
    /// The threshold from the settings it exceeded, in the same unit.
    pub threshold: f64,
}

/// Reads CPU, RAM and (through NVML, when a driver is present) GPU state on demand.
pub struct ResourceMonitor {
    system: Option<System>,
    nvml: Option<Nvml>,
    pid: Option<Pid>,
}

impl Default for ResourceMonitor {
    fn default() -> Self {
        Self::new()
    }
}

impl ResourceMonitor {
    /// A monitor of this machine; a source that cannot be opened is left out.
    pub fn new() -> Self {
        ResourceMonitor {
            system: System::new().ok(),
            nvml: Nvml::init().ok(),
            pid: sysinfo::get_current_pid().ok(),
        }
    }

    /// The resources now. CPU usage is measured since the previous call, so the first reads low.
    pub fn snapshot(&mut self) -> ResourceSnapshot {
        let mut snap = ResourceSnapshot {
            cpu_percent: 0.0,
            ram_used_bytes: 0,
            ram_total_bytes: 0,
            process_rss_bytes: 0,
            gpus: Vec::new(),
        };
        if let Some(system) = self.system.as_mut() {
            system.refresh_cpu_usage();
            system.refresh_memory();
            snap.cpu_percent = f64::from(system.global_cpu_usage());
            snap.ram_used_bytes = system.used_memory();
            snap.ram_total_bytes = system.total_memory();
            if let Some(pid) = self.pid {
                system.refresh_processes(ProcessesToUpdate::Some(&[pid]), true);
                snap.process_rss_bytes = system.process(pid).map_or(0, |p| p.memory());
            }
        }
        if let Some(nvml) = &self.nvml {
            let count = nvml.device_count().unwrap_or(0);
            snap.gpus = (0..count)
                .filter_map(|i| {
                    let device = nvml.device_by_index(i).ok()?;
                    let memory = device.memory_info().ok()?;
                    Some(GpuSnapshot {
                        name: device.name().unwrap_or_else(|_| format!("GPU {i}")),
                        memory_used_bytes: memory.used,
                        memory_total_bytes: memory.total,
                        utilization_percent: device
                            .utilization_rates()
                            .map_or(0.0, |u| f64::from(u.gpu)),
                        temperature_c: device
                            .temperature(TemperatureSensor::Gpu)
                            .map_or(0.0, f64::from),
                    })
                })
                .collect();
        }
        snap
    }
}

/// Samples one GPU's utilisation in a thread, for its mean over spans of time (a training
/// epoch). NVML numbers GPUs in PCI order and CUDA fastest first, which agree on machines
/// with GPUs of one kind.
pub struct UtilizationSampler {
    totals: Arc<Mutex<(f64, u32)>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl UtilizationSampler {
    /// None without an NVIDIA driver or without that GPU.
    pub fn start(index: u32, every: Duration) -> Option<Self> {
        let nvml = Nvml::init().ok()?;
        nvml.device_by_index(index).ok()?;
        let totals = Arc::new(Mutex::new((0.0, 0)));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (totals, stop) = (Arc::clone(&totals), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let rate = nvml
                        .device_by_index(index)
                        .and_then(|d| d.utilization_rates());
                    if let Ok(rate) = rate {
                        let mut totals = totals.lock().unwrap_or_else(|p| p.into_inner());
                        totals.0 += f64::from(rate.gpu);
                        totals.1 += 1;
                    }
                    std::thread::sleep(every);
                }
            })
        };
        Some(Self {
            totals,
            stop,
            thread: Some(thread),
        })
    }

    /// The mean utilisation (percent) since the last call; None without a sample.
    pub fn take_mean(&self) -> Option<f64> {
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        let (sum, count) = std::mem::replace(&mut *totals, (0.0, 0));
        (count > 0).then(|| sum / f64::from(count))
    }
}

impl Drop for UtilizationSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl ResourceSnapshot {
    /// Flat (name, value) pairs as stored in the `metrics` table.
    pub fn metrics(&self) -> Vec<(String, f64)> {
        let mut out = vec![
            ("cpu_percent".to_string(), self.cpu_percent),
            ("ram_used_bytes".to_string(), self.ram_used_bytes as f64),
            (
                "process_rss_bytes".to_string(),
                self.process_rss_bytes as f64,
            ),
        ];
        for (i, gpu) in self.gpus.iter().enumerate() {
            out.push((
                format!("gpu{i}_memory_used_bytes"),
                gpu.memory_used_bytes as f64,
            ));
            out.push((
                format!("gpu{i}_utilization_percent"),
                gpu.utilization_percent,
            ));
            out.push((format!("gpu{i}_temperature_c"), gpu.temperature_c));
        }
        out
    }

    /// The metrics over their thresholds in `settings`: RAM and GPU memory percent, GPU heat.
    pub fn alerts(&self, settings: &Settings) -> Vec<Alert> {
        let mut alerts = Vec::new();
        let mut check = |metric: String, value: f64, threshold: f64| {
            if value > threshold {
                alerts.push(Alert {
                    metric,
                    value,
                    threshold,
                });
            }
        };
        if self.ram_total_bytes > 0 {
            let percent = 100.0 * self.ram_used_bytes as f64 / self.ram_total_bytes as f64;
            check("ram_percent".into(), percent, settings.alert_ram_percent);
        }
        for (i, gpu) in self.gpus.iter().enumerate() {
            if gpu.memory_total_bytes > 0 {
                let percent = 100.0 * gpu.memory_used_bytes as f64 / gpu.memory_total_bytes as f64;
                check(
                    format!("gpu{i}_memory_percent"),
                    percent,
                    settings.alert_gpu_memory_percent,
                );
            }
            check(
                format!("gpu{i}_temperature_c"),
                gpu.temperature_c,
                settings.alert_gpu_temperature_c,
            );
        }
        alerts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_reads_this_machine_and_works_without_a_gpu() {
        let mut monitor = ResourceMonitor::new();
        let snap = monitor.snapshot();
        assert!(snap.ram_total_bytes > 0 && snap.ram_used_bytes <= snap.ram_total_bytes);
        assert!(snap.process_rss_bytes > 0);
        assert_eq!(snap.metrics().len(), 3 + 3 * snap.gpus.len());
    }

    #[test]
    fn alerts_fire_only_over_thresholds() {
        let snap = ResourceSnapshot {
            cpu_percent: 50.0,
            ram_used_bytes: 95,
            ram_total_bytes: 100,
            process_rss_bytes: 1,
            gpus: vec![GpuSnapshot {
                name: "g".into(),
                memory_used_bytes: 10,
                memory_total_bytes: 100,
                utilization_percent: 99.0,
                temperature_c: 90.0,
            }],
        };
        let metrics: Vec<String> = snap
            .alerts(&Settings::default())
            .into_iter()
            .map(|a| a.metric)
            .collect();
        assert_eq!(metrics, vec!["ram_percent", "gpu0_temperature_c"]);
    }
}
