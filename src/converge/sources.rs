//! The manifest's indexes as the index client reaches them: each entry's URL, or pip's
//! configured default for an entry without one (looked up once, remembered in the cache
//! directory while nothing pip reads changed, and only when an index used has no URL).

use std::path::Path;

use crate::index::client::{ClientError, IndexLocation, IndexSource};
use crate::index::pip_config::{DefaultIndex, PipConfigError};
use crate::index::pip_record;
use crate::manifest::Manifest;

/// Why the manifest's indexes could not be located.
#[derive(Debug)]
pub enum SourceError {
    /// An index URL is not usable.
    Client(ClientError),
    /// pip's default index could not be found.
    PipConfig(PipConfigError),
}

/// The manifest's indexes in manifest order, and which of them are pip's default
/// (for reports: where the URL came from).
pub struct IndexSources {
    /// One per manifest index.
    pub sources: Vec<IndexSource>,
    /// Index name → pip's default as found, for each index without a URL that is used.
    pub defaults: Vec<(String, DefaultIndex)>,
}

/// Locate the manifest's indexes. `only`: the indexes used (`None`: all); an unused
/// index without a URL gets a stand-in URL that is never fetched from.
pub fn index_sources(
    manifest: &Manifest,
    python: &Path,
    cache_dir: Option<&Path>,
    only: Option<&[String]>,
) -> Result<IndexSources, SourceError> {
    let mut default: Option<DefaultIndex> = None;
    let mut found = IndexSources {
        sources: Vec::new(),
        defaults: Vec::new(),
    };
    for index in &manifest.indexes {
        let used = only.is_none_or(|only| only.contains(&index.name));
        let url = match (&index.url, used) {
            (Some(url), _) => url.clone(),
            (None, true) => {
                let pip = match &default {
                    Some(pip) => pip.clone(),
                    None => {
                        let pip = pip_record::default_index(python.as_os_str(), cache_dir)
                            .map_err(SourceError::PipConfig)?;
                        default = Some(pip.clone());
                        pip
                    }
                };
                let url = pip.url.clone();
                found.defaults.push((index.name.clone(), pip));
                url
            }
            // Never fetched from: any well-formed URL stands in.
            (None, false) => "http://127.0.0.1/unused/".to_string(),
        };
        found.sources.push(IndexSource {
            location: IndexLocation::new(&index.name, &url).map_err(SourceError::Client)?,
            explicit: index.explicit,
        });
    }
    Ok(found)
}
