//! The types every part of the index client shares, below their users: the client's
//! settings, a named index location, and the one way a URL is rendered ([`redact`]).

use std::path::PathBuf;
use std::time::Duration;

use pep508_rs::PackageName;
use url::Url;

use crate::manifest::RedactedUrl;

use super::error::ClientError;

/// The client's policies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSettings {
    /// Time to establish a connection, e.g. `10s`.
    pub connect_timeout: Duration,
    /// Time for a whole request, body included, e.g. `60s`.
    pub timeout: Duration,
    /// Retries after the first attempt on connection failures, `5xx` and `429`, e.g. `3`.
    pub retries: u32,
    /// The first retry's delay, doubled for each further one, e.g. `500ms`.
    pub backoff: Duration,
    /// The longest delay between two attempts, e.g. `8s`.
    pub max_backoff: Duration,
    /// Requests in flight at once, e.g. `8`.
    pub concurrency: usize,
    /// The on-disk cache, e.g. `/root/.cache/cuda-upgrade`; `None` for no cache.
    pub cache_dir: Option<PathBuf>,
    /// Use only the cache; fail on anything not in it.
    pub offline: bool,
    /// The interpreter whose pip prepares an sdist's metadata when it is not static,
    /// e.g. `python3`.
    pub build_python: PathBuf,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(60),
            retries: 3,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            concurrency: 8,
            cache_dir: None,
            offline: false,
            build_python: PathBuf::from("python3"),
        }
    }
}

/// A named index at a simple-API base URL, e.g. `pytorch-cu130` at
/// `https://mirror.example/whl/cu130/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLocation {
    /// The manifest's name for it, e.g. `default`.
    pub name: String,
    /// The base URL, always ending in `/`. May carry credentials: render it only
    /// through [`redact`].
    pub url: Url,
}

impl IndexLocation {
    /// Parse an index base URL, e.g. `https://mirror.example/simple`.
    pub fn new(name: &str, url: &str) -> Result<Self, ClientError> {
        let url_error = |reason: String| ClientError::IndexUrl {
            url: redact_str(url),
            index: name.to_string(),
            reason,
        };
        let mut parsed = Url::parse(url).map_err(|error| url_error(error.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(url_error(format!(
                "the scheme `{}` is not http or https",
                parsed.scheme()
            )));
        }
        if !parsed.path().ends_with('/') {
            let path = format!("{}/", parsed.path());
            parsed.set_path(&path);
        }
        Ok(Self {
            name: name.to_string(),
            url: parsed,
        })
    }

    /// The project page URL, e.g. `…/simple/flashinfer-python/` (PEP 503 normalized).
    pub fn project_url(&self, name: &PackageName) -> Result<Url, ClientError> {
        self.url
            .join(&format!("{name}/"))
            .map_err(|error| ClientError::IndexUrl {
                url: redact(&self.url),
                index: self.name.clone(),
                reason: error.to_string(),
            })
    }
}

/// A URL with its credentials masked by the one masker every output uses
/// ([`crate::manifest::redact_url`]), e.g. `https://token:x@mirror.example/simple/` →
/// `https://token:***@mirror.example/simple/`.
pub fn redact(url: &Url) -> RedactedUrl {
    RedactedUrl::from(url)
}

/// [`redact`] for a string that may not parse as a URL.
pub(super) fn redact_str(url: &str) -> RedactedUrl {
    RedactedUrl::new(url)
}
