//! Where downloads may come from: the endpoint and mirrors the user configured, and the policy
//! every fetched URL (an asset's, a voice import's link, each redirect) is checked against.

use anyhow::Result;

use crate::settings::Settings;

/// Replaces the catalogue's endpoints (and the `download_endpoint` setting): the base URL its
/// relative URLs resolve against.
pub const ENDPOINT_ENV: &str = "TIMBRE_DOWNLOAD_ENDPOINT";

fn configured_endpoint() -> Option<String> {
    std::env::var(ENDPOINT_ENV)
        .ok()
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
}

/// The endpoints the user configured: `TIMBRE_DOWNLOAD_ENDPOINT`, else the `download_endpoint`
/// setting, then the `download_mirrors` setting's.
pub(crate) struct Configured {
    pub(crate) endpoint: Option<String>,
    pub(crate) mirrors: Vec<String>,
}

impl Configured {
    pub(crate) fn of(settings: &Settings) -> Configured {
        let endpoint = configured_endpoint().or_else(|| {
            Some(settings.download_endpoint.trim().to_string()).filter(|e| !e.is_empty())
        });
        let mirrors = settings
            .download_mirrors
            .iter()
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect();
        Configured { endpoint, mirrors }
    }
}

/// Which URLs may be fetched, for assets and voice imports alike: HTTPS, or plain HTTP on the
/// host and port of an endpoint the user configured as `http://…` (a local mirror; the tests'
/// server).
#[derive(Debug, Clone, Default)]
pub struct UrlPolicy {
    /// `scheme://host:port` of the plain-HTTP endpoints configured.
    plain_http: Vec<String>,
}

impl UrlPolicy {
    /// The policy the settings and `TIMBRE_DOWNLOAD_ENDPOINT` allow.
    pub fn of(settings: &Settings) -> UrlPolicy {
        UrlPolicy::from_configured(&Configured::of(settings))
    }

    pub(crate) fn from_configured(configured: &Configured) -> UrlPolicy {
        UrlPolicy {
            plain_http: configured
                .endpoint
                .iter()
                .chain(&configured.mirrors)
                .filter(|e| e.starts_with("http://"))
                .map(|e| origin(e))
                .collect(),
        }
    }

    /// Also allows plain HTTP at the origin of `url` (the update feed's, when it is on this
    /// machine: `crate::updates`).
    pub(crate) fn allow_origin_of(&mut self, url: &str) {
        self.plain_http.push(origin(url));
    }

    /// Refuses `url` unless it is HTTPS, or plain HTTP at the origin of a configured endpoint;
    /// the error says how to allow it.
    pub fn check(&self, url: &str) -> Result<()> {
        if url.starts_with("https://") || self.plain_http.contains(&origin(url)) {
            return Ok(());
        }
        Err(crate::error::invalid_input(format!(
            "{url} is not an HTTPS URL; plain HTTP is only used from an http:// endpoint \
             configured in the download_endpoint or download_mirrors setting, or {ENDPOINT_ENV}"
        )))
    }
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_allowed_only_at_a_configured_origin() {
        let settings = Settings {
            download_mirrors: vec!["http://127.0.0.1:8000/mirror".into()],
            ..Settings::default()
        };
        let policy = UrlPolicy::of(&settings);
        assert!(policy.check("https://huggingface.co/x").is_ok());
        assert!(policy.check("http://127.0.0.1:8000/x").is_ok());
        assert!(policy.check("http://127.0.0.1:8001/x").is_err());
        assert!(policy.check("http://example.com/x").is_err());
        assert_eq!(origin("http://127.0.0.1:80/a?b"), "http://127.0.0.1:80");
        assert_ne!(
            origin("http://127.0.0.1:81/a"),
            origin("http://127.0.0.1:80/a")
        );
    }
}
