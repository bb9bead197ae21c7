//! Where each locked file is downloaded from: its index's project page, read through
//! the index client (the lock records index names and file names, never URLs).

use std::collections::BTreeMap;

use crate::index::client::{IndexClient, IndexLocation, redact};

use super::{ExportError, Lock, split};

/// A locked file's URLs, credentials still in them (write them only masked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedFileUrl {
    /// The index's simple-API URL, e.g. `https://mirror.example/whl/cu130/`.
    pub index_url: String,
    /// The file's URL as the project page lists it, e.g.
    /// `https://files.example/…/torch-2.9.1+cu130-….whl`.
    pub file_url: String,
    /// With `all_files`: the release's other files the page lists with a sha256 (not
    /// yanked), e.g. the wheels of other platforms and the sdist.
    pub others: Vec<OtherFile>,
}

/// Another file of a locked release, e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_aarch64.whl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherFile {
    /// The file name.
    pub name: String,
    /// Its URL, credentials still in it.
    pub url: String,
    /// Its sha256 as the index lists it.
    pub sha256: String,
}

/// Each index package's file URL, by package name: one project page per package,
/// from `index_urls` (index name → URL, as the manifest resolves them). The page's
/// sha256, when it lists one, must equal the lock's. With `all_files`, the release's
/// other files come too.
pub async fn file_urls(
    client: &IndexClient,
    lock: &Lock,
    index_urls: &BTreeMap<String, String>,
    all_files: bool,
) -> Result<BTreeMap<String, LockedFileUrl>, ExportError> {
    let (indexed, _) = split(lock)?;
    let mut urls = BTreeMap::new();
    for package in indexed {
        let locked = package.package;
        let client_error = |source| ExportError::Client {
            package: locked.name.to_string(),
            index: package.index.to_string(),
            source: Box::new(source),
        };
        let url = index_urls
            .get(package.index)
            .ok_or_else(|| ExportError::UnknownIndex {
                package: locked.name.to_string(),
                index: package.index.to_string(),
            })?;
        let location = IndexLocation::new(package.index, url).map_err(client_error)?;
        let name = &locked.name;
        let not_listed = || ExportError::FileNotListed {
            package: locked.name.to_string(),
            file: package.file.to_string(),
            index: package.index.to_string(),
            url: location
                .project_url(name)
                .map(|url| redact(&url))
                .unwrap_or_else(|_| redact(&location.url))
                .into(),
        };
        let files = client
            .fetch_project(&location, name)
            .await
            .map_err(client_error)?
            .ok_or_else(not_listed)?;
        let file = files
            .iter()
            .find(|file| file.filename == package.file)
            .ok_or_else(not_listed)?;
        if let Some(listed) = &file.sha256
            && !listed.as_str().eq_ignore_ascii_case(package.sha256)
        {
            return Err(ExportError::HashMismatch {
                file: package.file.to_string(),
                index: package.index.to_string(),
                listed: listed.to_string(),
                locked: package.sha256.to_string(),
            });
        }
        let version = Some(&locked.version);
        let others = files
            .iter()
            .filter(|other| {
                all_files
                    && other.filename != package.file
                    && other.yanked.is_none()
                    && version == Some(other.dist.version())
            })
            .filter_map(|other| {
                Some(OtherFile {
                    name: other.filename.clone(),
                    url: other.url.to_string(),
                    sha256: other.sha256.as_ref()?.to_string(),
                })
            })
            .collect();
        urls.insert(
            locked.name.to_string(),
            LockedFileUrl {
                index_url: location.url.to_string(),
                file_url: file.url.to_string(),
                others,
            },
        );
    }
    Ok(urls)
}
