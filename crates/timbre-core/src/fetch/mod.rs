//! Fetching over HTTP, for asset downloads and voice imports alike: the URL policy and the
//! configured endpoints (`endpoints`), and one attempt at one URL: an HTTP GET that continues
//! the `.part` file from its length with a Range request, following redirects itself so each
//! hop is checked against the URL policy.
//!
//! The client is `ureq` 3 with rustls: blocking I/O suits a job that runs on a worker thread
//! (no async runtime to start for it), it is small, it needs no system TLS library, and it
//! honours HTTPS_PROXY/NO_PROXY from the environment by default.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

use crate::disk::human_bytes;
use crate::settings::Settings;
use anyhow::{Context, Result};

mod endpoints;

pub(crate) use endpoints::Configured;
pub use endpoints::{ENDPOINT_ENV, UrlPolicy};

const MAX_REDIRECTS: usize = 8;
const CHUNK: usize = 64 * 1024;

/// How an attempt ended, when nothing on this machine failed.
#[derive(Debug, PartialEq)]
pub enum Attempt {
    /// The server sent the whole rest of the file.
    Complete,
    /// Worth another try at the same URL: the connection failed or dropped, a 5xx.
    Transient(String),
    /// This URL will not serve the file (404, another 4xx, a refused or endless redirect): the
    /// next mirror is tried.
    Refused(String),
    /// The server sent more than the declared size: what the part held is not the file, so it
    /// was emptied, and the next mirror is tried.
    TooLong(String),
}

/// What one attempt may receive.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The whole file's size as the catalogue declares it: a body that goes beyond it is not
    /// the file.
    pub declared_size: Option<u64>,
    /// How slow the transfer may get before the attempt counts as stalled.
    pub min_throughput: MinThroughput,
}

/// The least a transfer must keep up, or it has stalled: `bytes` in each `window`, counted in
/// consecutive windows from the response (a server that trickles a byte now and then would
/// otherwise hold a download forever, each byte restarting the read timeout).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinThroughput {
    /// Bytes that must arrive in each window (the `download_stall_bytes` setting).
    pub bytes: u64,
    /// Length of a window, 1 s to an hour (the `download_stall_secs` setting).
    pub window: Duration,
}

impl MinThroughput {
    /// The `download_stall_bytes` and `download_stall_secs` settings.
    pub fn of(settings: &Settings) -> MinThroughput {
        // Held to the setting's range: a library edited by hand could hold a negative number,
        // on which `Duration` panics.
        let secs = settings.download_stall_secs.clamp(1.0, 3600.0);
        MinThroughput {
            bytes: settings.download_stall_bytes,
            window: Duration::try_from_secs_f64(secs).unwrap_or(Duration::from_secs(3600)),
        }
    }

    fn stalled(&self, url: &str, have: u64) -> Attempt {
        Attempt::Transient(format!(
            "{url}: too slow: under {} in {} s (stalled after {have} bytes)",
            human_bytes(self.bytes),
            self.window.as_secs_f64()
        ))
    }
}

impl Default for MinThroughput {
    fn default() -> Self {
        MinThroughput::of(&Settings::default())
    }
}

/// The HTTP client for downloads: redirects left to `attempt`, HTTP errors as responses,
/// 30 s to connect and 60 s for a response.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .user_agent(concat!("timbre-studio/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// Fetches the rest of `url` into `part` (opened for reading and writing), resuming from its
/// length, within `bounds`; `on_chunk` sees the part's length after each chunk and may stop
/// the transfer with an error (cancellation). A server that ignores the Range header restarts
/// the file.
pub fn attempt(
    agent: &ureq::Agent,
    url: &str,
    policy: &UrlPolicy,
    bounds: &Bounds,
    part: &mut File,
    on_chunk: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Attempt> {
    let have = part.metadata().context("reading the .part file")?.len();
    let mut current = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        if let Err(err) = policy.check(&current) {
            return Ok(Attempt::Refused(format!("{err}")));
        }
        // A read that waits a whole window for nothing has stalled.
        let mut request = agent
            .get(&current)
            .config()
            .timeout_per_read(Some(bounds.min_throughput.window))
            .build();
        if have > 0 {
            request = request.header("Range", format!("bytes={have}-"));
        }
        let response = match request.call() {
            Ok(response) => response,
            Err(err) => return Ok(Attempt::Transient(format!("{current}: {err}"))),
        };
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .map(|l| resolve(&current, l));
        match (status, location) {
            (300..=399, Some(next)) => {
                current = next;
                continue;
            }
            (206, _) => {
                let start = content_range_start(&response);
                if start != Some(have) {
                    part.set_len(0).context("emptying the .part file")?;
                    return Ok(Attempt::Transient(format!(
                        "{current} answered a request from byte {have} with bytes from {}",
                        start.map_or("an unknown offset".into(), |s| s.to_string())
                    )));
                }
                return receive(response.into_body(), part, have, &current, bounds, on_chunk);
            }
            (200, _) => {
                // No Range support (or no part yet): the whole file, from the start.
                part.set_len(0).context("emptying the .part file")?;
                return receive(response.into_body(), part, 0, &current, bounds, on_chunk);
            }
            (416, _) => {
                part.set_len(0).context("emptying the .part file")?;
                return Ok(Attempt::Transient(format!(
                    "{current} has no bytes from {have} on: starting again"
                )));
            }
            (500..=599, _) => {
                return Ok(Attempt::Transient(format!("{current}: HTTP {status}")));
            }
            _ => return Ok(Attempt::Refused(format!("{current}: HTTP {status}"))),
        }
    }
    Ok(Attempt::Refused(format!(
        "{url}: more than {MAX_REDIRECTS} redirects"
    )))
}

fn receive(
    body: ureq::Body,
    part: &mut File,
    from: u64,
    url: &str,
    bounds: &Bounds,
    on_chunk: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Attempt> {
    part.seek(SeekFrom::Start(from))
        .context("seeking in the .part file")?;
    let mut reader = body.into_reader();
    let mut buf = vec![0u8; CHUNK];
    let mut have = from;
    let min = bounds.min_throughput;
    let (mut window_start, mut window_from) = (Instant::now(), from);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if timed_out(&err) => return Ok(min.stalled(url, have)),
            Err(err) => {
                return Ok(Attempt::Transient(format!(
                    "{url}: the connection dropped after {have} bytes ({err})"
                )));
            }
        };
        if let Some(size) = bounds.declared_size
            && have + n as u64 > size
        {
            part.set_len(0).context("emptying the .part file")?;
            return Ok(Attempt::TooLong(format!(
                "{url} sent more than the {} the catalogue declares",
                human_bytes(size)
            )));
        }
        part.write_all(&buf[..n])
            .context("writing the .part file")?;
        have += n as u64;
        if window_start.elapsed() >= min.window {
            if have - window_from < min.bytes {
                return Ok(min.stalled(url, have));
            }
            (window_start, window_from) = (Instant::now(), have);
        }
        on_chunk(have)?;
    }
    part.flush().context("writing the .part file")?;
    Ok(Attempt::Complete)
}

/// Whether a body read failed on the read timeout (ureq wraps its own error in an `io::Error`).
fn timed_out(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::TimedOut
        || err
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)))
}

fn content_range_start(response: &ureq::http::Response<ureq::Body>) -> Option<u64> {
    let value = response.headers().get("content-range")?.to_str().ok()?;
    let range = value.trim().strip_prefix("bytes ")?;
    range.split('-').next()?.trim().parse().ok()
}

/// A redirect's target: absolute, or relative to the URL that redirected.
fn resolve(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some(path) = location.strip_prefix("//") {
        return format!("{scheme}://{path}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
    let dir = rest[..path_end]
        .rfind('/')
        .map_or(authority, |i| &rest[..=i]);
    let dir = if dir == authority {
        format!("{authority}/")
    } else {
        dir.to_string()
    };
    format!("{scheme}://{dir}{location}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_window_a_hand_edited_library_holds_is_kept_in_range() {
        let window = |secs: f64| {
            let settings = Settings {
                download_stall_secs: secs,
                ..Settings::default()
            };
            MinThroughput::of(&settings).window
        };
        assert_eq!(window(2.5), Duration::from_millis(2500));
        assert_eq!(window(-5.0), Duration::from_secs(1));
        assert_eq!(window(f64::INFINITY), Duration::from_secs(3600));
    }

    #[test]
    fn redirect_targets_resolve_against_the_redirecting_url() {
        let base = "https://huggingface.co/a/resolve/main/x.pt?download=1";
        assert_eq!(
            resolve(base, "https://cdn.example/y"),
            "https://cdn.example/y"
        );
        assert_eq!(resolve(base, "/b/y"), "https://huggingface.co/b/y");
        assert_eq!(resolve(base, "//cdn.example/y"), "https://cdn.example/y");
        assert_eq!(
            resolve(base, "y.pt"),
            "https://huggingface.co/a/resolve/main/y.pt"
        );
        assert_eq!(resolve("http://h:1", "y"), "http://h:1/y");
    }
}
