//! The on-disk cache of index responses, e.g. under `~/.cache/cuda-upgrade`.
//!
//! Layout (entries keyed by the sha256 of the URL with its credentials removed, so
//! no secret reaches the disk):
//! - `simple-v1/KEY.json` + `simple-v1/KEY.body`: a project page with its `ETag`,
//!   `Last-Modified` and content type, used as it is while the index's
//!   `Cache-Control: max-age` lasts, then revalidated (a `304` reuses the body);
//! - `metadata-v1/KEY`: a release's core metadata (from a PEP 658 file or read out of
//!   a wheel); a distribution file never changes once published, so these entries
//!   are kept forever.
//!
//! Writes go to a temporary file and are renamed into place, so a crash never leaves
//! a torn entry.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::error::ClientError;

/// A project page as cached, with what revalidation needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedPage {
    /// The page URL, credentials removed, e.g. `https://mirror.example/simple/six/`.
    pub url: String,
    /// The URL the page finally came from after redirects, credentials removed.
    pub final_url: String,
    /// e.g. `application/vnd.pypi.simple.v1+json`.
    pub content_type: Option<String>,
    /// e.g. `"a1b2"`.
    pub etag: Option<String>,
    /// e.g. `Wed, 02 Dec 2026 13:07:46 GMT`.
    pub last_modified: Option<String>,
    /// Until when (seconds since the Unix epoch) the page may be used without asking
    /// the index again, from the response's `Cache-Control: max-age` less its `Age`,
    /// as pip and uv use it; `None` when the index gave no lifetime (always revalidated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_until: Option<u64>,
}

impl CachedPage {
    /// Whether the page may be used now without revalidating it.
    pub fn is_fresh(&self) -> bool {
        self.fresh_until.is_some_and(|until| now_seconds() < until)
    }
}

/// Seconds since the Unix epoch; `0` on a clock before it (every page is then stale).
pub fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// Until when a response may be reused, from its `Cache-Control` and `Age` values, e.g.
/// `max-age=600, public` with `Age: 30` → now + 570; `None` for `no-cache`, `no-store`,
/// no `max-age` or a lifetime already spent.
pub fn fresh_until(cache_control: Option<&str>, age: Option<&str>) -> Option<u64> {
    let directives: Vec<String> = cache_control?
        .split(',')
        .map(|directive| directive.trim().to_ascii_lowercase())
        .collect();
    if directives
        .iter()
        .any(|directive| directive == "no-cache" || directive == "no-store")
    {
        return None;
    }
    let max_age: u64 = directives
        .iter()
        .find_map(|directive| directive.strip_prefix("max-age="))?
        .trim_matches('"')
        .parse()
        .ok()?;
    let age: u64 = age.and_then(|age| age.trim().parse().ok()).unwrap_or(0);
    let left = max_age.checked_sub(age).filter(|left| *left > 0)?;
    Some(now_seconds().saturating_add(left))
}

/// The cache rooted at one directory.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// A cache at `root`, e.g. `/root/.cache/cuda-upgrade`; created on first write.
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// The cached page for `key_url` (credentials already removed), if any.
    pub fn page(&self, key_url: &str) -> Result<Option<(CachedPage, Vec<u8>)>, ClientError> {
        let (header_path, body_path) = self.page_paths(key_url);
        let Some(header) = read_optional(&header_path)? else {
            return Ok(None);
        };
        let Ok(page) = serde_json::from_slice::<CachedPage>(&header) else {
            // A header from another build or a torn write: refetch.
            return Ok(None);
        };
        let Some(body) = read_optional(&body_path)? else {
            return Ok(None);
        };
        Ok(Some((page, body)))
    }

    /// Store a page's header alone, e.g. with a new lifetime after a `304`.
    pub fn store_page_header(&self, page: &CachedPage) -> Result<(), ClientError> {
        let (header_path, _) = self.page_paths(&page.url);
        let header = serde_json::to_vec_pretty(page).map_err(|source| ClientError::Cache {
            path: header_path.clone(),
            source: std::io::Error::other(source),
        })?;
        write_atomic(&header_path, &header)
    }

    /// Store a page and its body.
    pub fn store_page(&self, page: &CachedPage, body: &[u8]) -> Result<(), ClientError> {
        let (header_path, body_path) = self.page_paths(&page.url);
        let header = serde_json::to_vec_pretty(page).map_err(|source| ClientError::Cache {
            path: header_path.clone(),
            source: std::io::Error::other(source),
        })?;
        write_atomic(&body_path, body)?;
        write_atomic(&header_path, &header)
    }

    /// Cached immutable metadata for `key` (a file URL without credentials, or a hash).
    pub fn metadata(&self, key: &str) -> Result<Option<Vec<u8>>, ClientError> {
        read_optional(&self.metadata_path(key))
    }

    /// Store immutable metadata under `key`.
    pub fn store_metadata(&self, key: &str, bytes: &[u8]) -> Result<(), ClientError> {
        write_atomic(&self.metadata_path(key), bytes)
    }

    fn page_paths(&self, key_url: &str) -> (PathBuf, PathBuf) {
        let key = digest(key_url);
        let directory = self.root.join("simple-v1");
        (
            directory.join(format!("{key}.json")),
            directory.join(format!("{key}.body")),
        )
    }

    fn metadata_path(&self, key: &str) -> PathBuf {
        self.root.join("metadata-v1").join(digest(key))
    }
}

fn digest(text: &str) -> String {
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, ClientError> {
    match fs_err::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ClientError::Cache {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ClientError> {
    crate::local_file::write_atomic(path, bytes).map_err(|source| ClientError::Cache {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes() {
        let now = now_seconds();
        let until = fresh_until(Some("max-age=600, public"), Some("30")).unwrap_or(0);
        assert!((now + 569..=now + 571).contains(&until), "{until} vs {now}");
        assert_eq!(fresh_until(Some("max-age=600"), Some("600")), None);
        assert_eq!(fresh_until(Some("no-cache, max-age=600"), None), None);
        assert_eq!(fresh_until(Some("public"), None), None);
        assert_eq!(fresh_until(None, None), None);
        assert_eq!(
            fresh_until(Some("Max-Age=\"60\""), None).map(|until| until > now),
            Some(true)
        );
    }
}
