//! Voices shared as links: Hugging Face `resolve` and `blob` links (a `blob` link is the file's
//! web page; its `resolve` twin is the file) and direct links, downloaded with the assets'
//! HTTP code (same URL policy: HTTPS, or the configured plain-HTTP endpoint) into the store's
//! tmp folder.

use std::io::{Seek, SeekFrom};
use std::time::Duration;

use anyhow::{Context, Result};
use tempfile::NamedTempFile;

use crate::fetch::{self, Attempt, Bounds, MinThroughput, UrlPolicy};

/// Bigger than any voice archive (a model, its index, samples).
const MAX_DOWNLOAD_BYTES: u64 = 4 << 30;
const TRIES: u32 = 4;

/// Whether `text` is a link rather than a path.
pub fn is_url(text: &str) -> bool {
    let lower = text.trim().to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// The URL that serves the file: `…/blob/<rev>/<path>` on huggingface.co (or hf.co) becomes
/// `…/resolve/<rev>/<path>`.
pub fn file_url(url: &str) -> String {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let on_hub = matches!(
        host.to_ascii_lowercase().as_str(),
        "huggingface.co" | "www.huggingface.co" | "hf.co"
    );
    let mut parts: Vec<&str> = path.split('/').collect();
    // <owner>/<repo>/blob/… for models; datasets|spaces/<owner>/<repo>/blob/… otherwise.
    let at = if matches!(parts.first(), Some(&"datasets" | &"spaces")) {
        3
    } else {
        2
    };
    if on_hub && parts.get(at) == Some(&"blob") {
        parts[at] = "resolve";
    }
    format!("{scheme}://{host}/{}", parts.join("/"))
}

/// The file name a URL ends with, without its query (`voice.zip`), percent-escapes decoded.
pub fn file_name(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let last = path.rsplit('/').next().unwrap_or_default();
    let mut bytes = Vec::with_capacity(last.len());
    let raw = last.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        let hex = raw
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (raw[i], hex) {
            (b'%', Some(byte)) => {
                bytes.push(byte);
                i += 3;
            }
            (byte, _) => {
                bytes.push(byte);
                i += 1;
            }
        }
    }
    let name = String::from_utf8_lossy(&bytes).replace(['/', '\\'], "_");
    if name.is_empty() {
        "download".into()
    } else {
        name
    }
}

/// Downloads `url` into a temporary file of `tmp_dir`, retrying dropped connections (resumed
/// with Range) and 5xx answers; `on_bytes` sees the bytes so far and may stop it (cancel).
pub fn download(
    tmp_dir: &std::path::Path,
    url: &str,
    policy: &UrlPolicy,
    on_bytes: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<NamedTempFile> {
    let mut part = tempfile::Builder::new()
        .prefix("voice-download-")
        .suffix(".part")
        .tempfile_in(tmp_dir)
        .with_context(|| format!("creating a download file in {}", tmp_dir.display()))?;
    let agent = fetch::agent();
    let bounds = Bounds {
        declared_size: None,
        min_throughput: MinThroughput::default(),
    };
    let mut backoff = Duration::from_millis(500);
    let mut limited = |bytes: u64| {
        if bytes > MAX_DOWNLOAD_BYTES {
            return Err(crate::error::invalid_input(format!(
                "{url}: more than {} GB: not a voice",
                MAX_DOWNLOAD_BYTES >> 30
            )));
        }
        on_bytes(bytes)
    };
    for attempt in 1..=TRIES {
        let outcome = fetch::attempt(
            &agent,
            url,
            policy,
            &bounds,
            part.as_file_mut(),
            &mut limited,
        )
        .with_context(|| format!("downloading {url}"))?;
        match outcome {
            Attempt::Complete => {
                part.as_file_mut().seek(SeekFrom::Start(0))?;
                return Ok(part);
            }
            Attempt::Refused(problem) | Attempt::TooLong(problem) => {
                return Err(crate::error::invalid_input(format!(
                    "could not download {url}: {problem}"
                )));
            }
            Attempt::Transient(problem) if attempt == TRIES => {
                return Err(anyhow::anyhow!(
                    "could not download {url}: {problem} (tried {TRIES} times)"
                ));
            }
            Attempt::Transient(_) => {
                std::thread::sleep(backoff);
                backoff *= 2;
            }
        }
    }
    unreachable!("the last try returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_blob_links_become_resolve_links() {
        assert_eq!(
            file_url("https://huggingface.co/alice/voices/blob/main/sub/alice.zip"),
            "https://huggingface.co/alice/voices/resolve/main/sub/alice.zip"
        );
        assert_eq!(
            file_url(" https://huggingface.co/datasets/a/b/blob/v1/x.pth?download=true "),
            "https://huggingface.co/datasets/a/b/resolve/v1/x.pth?download=true"
        );
        let resolve = "https://huggingface.co/alice/voices/resolve/main/alice.zip";
        assert_eq!(file_url(resolve), resolve);
        // Only the hub's blob links change: `blob` elsewhere is a path like any other.
        let other = "https://example.com/a/b/blob/main/x.zip";
        assert_eq!(file_url(other), other);
        assert_eq!(
            file_url("https://huggingface.co/blob/x/blob/y.zip"),
            "https://huggingface.co/blob/x/resolve/y.zip"
        );
    }

    #[test]
    fn links_name_their_file() {
        assert_eq!(
            file_name("https://h/a/My%20Voice.zip?download=true"),
            "My Voice.zip"
        );
        assert_eq!(file_name("https://h/"), "download");
        assert_eq!(file_name("https://h/a%2Fb.pth"), "a_b.pth");
        assert_eq!(file_name("https://h/100%.pth"), "100%.pth");
        assert!(is_url("HTTPS://x") && !is_url("/tmp/https://x"));
    }
}
