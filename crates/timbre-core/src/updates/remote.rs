//! Fetching the feed and its signature: the downloads' client, attempt and URL policy (so each
//! redirect is checked as a download's is), into an anonymous temporary file, bounded in size
//! so that a server cannot feed the check without end.
//!
//! The policy is the downloads' (HTTPS, or plain HTTP at a configured mirror) plus plain HTTP on
//! this machine for the feed's own origin: a feed served from 127.0.0.1 (the tests, a release
//! engineer's dry run). Plain HTTP elsewhere stays refused even though the feed is signed: the
//! signature guards what is installed, not which versions the user is seen asking about.

use std::io::{Read, Seek, SeekFrom};

use anyhow::{Context, Result};

use crate::fetch::{self, Attempt, Bounds, MinThroughput, UrlPolicy};
use crate::settings::Settings;

/// The largest manifest read: years of releases fit in a few kB.
const MAX_MANIFEST: u64 = 1 << 20;
/// A base64 Ed25519 signature is 88 characters; a little room for whitespace.
const MAX_SIGNATURE: u64 = 1024;
const TRIES: u32 = 3;

/// The URL policy for the feed at `feed_url` and the packages it lists.
pub(super) fn policy(settings: &Settings, feed_url: &str) -> UrlPolicy {
    let mut policy = UrlPolicy::of(settings);
    if is_loopback_http(feed_url) {
        policy.allow_origin_of(feed_url);
    }
    policy
}

/// Whether `url` is plain HTTP to this machine (127.0.0.0/8, `localhost`, `[::1]`).
fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &url[7..])
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // No user info: `http://127.0.0.1@evil.example/` goes to evil.example.
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The manifest's bytes and the signature file's.
pub(super) fn fetch_feed(
    settings: &Settings,
    feed_url: &str,
    policy: &UrlPolicy,
) -> Result<(Vec<u8>, Vec<u8>)> {
    if let Err(err) = policy.check(feed_url) {
        return Err(crate::error::invalid_input(format!(
            "update feed {feed_url}: not an HTTPS URL (plain HTTP is used only on this machine, \
             127.0.0.1, or at a mirror configured in download_endpoint or download_mirrors): \
             {err}"
        )));
    }
    let agent = fetch::agent();
    let throughput = MinThroughput::of(settings);
    let manifest = get(&agent, feed_url, policy, MAX_MANIFEST, throughput)
        .with_context(|| format!("update feed {feed_url}"))?;
    let signature_url = format!("{feed_url}.sig");
    let signature =
        get(&agent, &signature_url, policy, MAX_SIGNATURE, throughput).with_context(|| {
            format!(
                "update feed {feed_url}: its signature {signature_url} could not be fetched (an \
                 unsigned feed is not trusted)"
            )
        })?;
    Ok((manifest, signature))
}

/// The whole body at `url`, at most `limit` bytes, tried again after a transient failure.
fn get(
    agent: &ureq::Agent,
    url: &str,
    policy: &UrlPolicy,
    limit: u64,
    min_throughput: MinThroughput,
) -> Result<Vec<u8>> {
    let bounds = Bounds {
        declared_size: Some(limit),
        min_throughput,
    };
    let mut last = String::new();
    for attempt in 0..TRIES {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        // The attempt resumes from the file's length: a fresh one each try starts from zero.
        let mut file = tempfile::tempfile().context("creating a temporary file")?;
        match fetch::attempt(agent, url, policy, &bounds, &mut file, &mut |_| Ok(()))? {
            Attempt::Complete => {
                let mut body = Vec::new();
                file.seek(SeekFrom::Start(0))?;
                file.read_to_end(&mut body)?;
                return Ok(body);
            }
            Attempt::Transient(problem) => last = problem,
            Attempt::Refused(problem) => return Err(crate::error::not_found(problem)),
            Attempt::TooLong(_) => {
                return Err(crate::error::invalid_input(format!(
                    "{url} is larger than {}: not an update feed",
                    crate::disk::human_bytes(limit)
                )));
            }
        }
    }
    Err(anyhow::anyhow!("{last} (tried {TRIES} times)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_allowed_for_the_feed_only_on_this_machine() {
        for url in [
            "http://127.0.0.1:8000/stable.json",
            "http://127.1.2.3/stable.json",
            "HTTP://localhost:9/x",
            "http://[::1]:80/x",
        ] {
            assert!(is_loopback_http(url), "{url}");
        }
        for url in [
            "https://127.0.0.1/x",
            "http://127.0.0.1@evil.example/x",
            "http://127.0.0.1.evil.example/x",
            "http://192.168.1.2/x",
            "http://localhost.example/x",
        ] {
            assert!(!is_loopback_http(url), "{url}");
        }
        let settings = Settings::default();
        let local = policy(&settings, "http://127.0.0.1:8000/stable.json");
        assert!(local.check("http://127.0.0.1:8000/p.tar.gz").is_ok());
        assert!(local.check("http://127.0.0.1:8001/p.tar.gz").is_err());
        let remote = policy(&settings, "http://updates.example/stable.json");
        assert!(remote.check("http://updates.example/stable.json").is_err());
        assert!(remote.check("https://updates.example/p.tar.gz").is_ok());
    }
}
