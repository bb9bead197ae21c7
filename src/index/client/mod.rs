//! The live index client: project pages (PEP 691 JSON or PEP 503 HTML), release
//! metadata (PEP 658 files, else `METADATA` read out of the wheel with HTTP range
//! requests), an on-disk cache, the closure explorer that `index snapshot` uses, the
//! lazy fetcher that live resolution asks for what it visits, and the digest of a
//! whole file that `index hash` records.
//!
//! This is the only module of the crate that does network I/O. It turns what an
//! index serves into the [`crate::index::Universe`] model; which index may serve a
//! package is decided by the caller ([`explore()`] applies the manifest's policy). URLs
//! are rendered only through [`redact`], so credentials never reach a message.

mod cache;
mod dns;
mod error;
pub mod explore;
mod http;
pub mod live;
mod page_json;
mod pyproject;
mod range;
mod raw_page;
mod sdist;
pub mod simple;
mod types;

use std::cell::Cell;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use pep440_rs::Version;
use pep508_rs::PackageName;
use sha2::Digest;

pub use error::ClientError;
pub use explore::{
    Exploration, ExploreSettings, IndexSource, NoReporter, Reporter, RootRequest, explore,
};
pub use simple::{MetadataOffer, ProjectFile};
pub use types::{ClientSettings, IndexLocation, redact};

use self::http::{ByteRange, Http, PageResponse, RangeResponse};
use self::range::{SparseFile, SparseReader, central_directory_start};
use crate::index::filename::DistFilename;
use crate::index::metadata::{CoreMetadata, read_wheel_metadata};
use crate::index::model::{DistFile, Release};
use crate::manifest::Sha256;

/// How many bytes of a wheel's tail the first range request asks for.
const TAIL_BYTES: u64 = 64 * 1024;
/// Range requests per wheel before giving up on ranges and downloading it whole.
const MAX_RANGE_ROUNDS: usize = 8;
/// The largest central directory fetched whole in one request (about 500 000 entries);
/// an end record claiming more is not trusted with one request.
const MAX_DIRECTORY_BYTES: u64 = 64 * 1024 * 1024;

/// The live index client; cheap to clone (clones share connections, cache and limits).
#[derive(Debug, Clone)]
pub struct IndexClient {
    http: Arc<Http>,
    /// See [`ClientSettings::build_python`].
    build_python: PathBuf,
    /// Sdist metadata builds at once: one per CPU (at most four), each an interpreter
    /// installing a build environment.
    builds: Arc<tokio::sync::Semaphore>,
}

impl IndexClient {
    /// A client with these policies.
    pub fn new(settings: ClientSettings) -> Result<Self, ClientError> {
        Ok(Self {
            build_python: settings.build_python.clone(),
            builds: Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(1, |cpus| cpus.get().min(4)),
            )),
            http: Arc::new(Http::new(settings)?),
        })
    }

    /// The files of project `name` on `index`; `None` when the index does not have
    /// the project (`404`/`410`), which is not an error.
    pub async fn fetch_project(
        &self,
        index: &IndexLocation,
        name: &PackageName,
    ) -> Result<Option<Vec<ProjectFile>>, ClientError> {
        let page = self.fetch_project_where(index, name, &|_, _| true).await?;
        Ok(page.map(|page| page.files))
    }

    /// [`Self::fetch_project`] keeping only the files `keep` wants.
    pub async fn fetch_project_where(
        &self,
        index: &IndexLocation,
        name: &PackageName,
        keep: simple::Keep<'_>,
    ) -> Result<Option<simple::ListedPage>, ClientError> {
        let url = index.project_url(name)?;
        match self.http.page(&index.name, &url).await? {
            PageResponse::NotFound => Ok(None),
            PageResponse::Found {
                body,
                content_type,
                final_url,
            } => simple::parse_page_where(
                &body,
                content_type.as_deref(),
                &final_url,
                &index.url,
                keep,
            )
            .map(Some)
            .map_err(|reason| ClientError::Page {
                url: redact(&url),
                index: index.name.clone(),
                reason,
            }),
        }
    }

    /// The core metadata of one file: its PEP 658 file when the index offers one
    /// (sha256-checked when the index gives the hash), else the wheel's
    /// `*.dist-info/METADATA` read with range requests (a full download when the
    /// server refuses ranges). Cached forever: a published file never changes.
    pub async fn fetch_metadata(
        &self,
        index: &IndexLocation,
        file: &ProjectFile,
    ) -> Result<CoreMetadata, ClientError> {
        let key = match &file.sha256 {
            Some(sha256) => format!("sha256:{sha256}:{}", file.filename),
            None => redact(&file.url).into(),
        };
        let metadata_error = |source| ClientError::Metadata {
            filename: file.filename.clone(),
            index: index.name.clone(),
            source: Box::new(source),
        };
        if let Some(cache) = self.http.cache()
            && let Some(bytes) = cache.metadata(&key)?
            && let Ok(metadata) = CoreMetadata::parse(&bytes, &file.filename)
        {
            return Ok(metadata);
        }
        let bytes = match (&file.metadata, &file.dist) {
            (MetadataOffer::Offered(expected), _) => {
                let mut url = file.url.clone();
                let path = format!("{}.metadata", url.path());
                url.set_path(&path);
                let bytes = self.http.bytes(&index.name, &url).await?;
                if let Some(expected) = expected {
                    let actual = hex::encode(sha2::Sha256::digest(&bytes));
                    if actual != expected.as_str() {
                        return Err(ClientError::HashMismatch {
                            url: redact(&url),
                            index: index.name.clone(),
                            expected: expected.to_string(),
                            actual,
                        });
                    }
                }
                bytes
            }
            (MetadataOffer::Absent, DistFilename::Wheel(_)) => {
                self.wheel_metadata(index, file).await?
            }
            (MetadataOffer::Absent, DistFilename::Sdist(_)) => {
                sdist::sdist_metadata(&self.http, index, file, &self.build_python, &self.builds)
                    .await?
            }
        };
        let metadata = CoreMetadata::parse(&bytes, &file.filename).map_err(metadata_error)?;
        if let Some(cache) = self.http.cache() {
            cache.store_metadata(&key, &bytes)?;
        }
        Ok(metadata)
    }

    /// The sha256 and size of a listed file, computed while downloading it (never
    /// cached: the point is what the index serves now). When the page announces a
    /// digest, the download must match it.
    pub async fn file_digest(
        &self,
        index: &IndexLocation,
        file: &ProjectFile,
    ) -> Result<FileDigest, ClientError> {
        let (actual, size) = self.http.digest(&index.name, &file.url).await?;
        if let Some(expected) = &file.sha256
            && expected.as_str() != actual
        {
            return Err(ClientError::HashMismatch {
                url: redact(&file.url),
                index: index.name.clone(),
                expected: expected.to_string(),
                actual,
            });
        }
        let sha256 = Sha256::from_str(&actual).map_err(|reason| ClientError::Page {
            url: redact(&file.url),
            index: index.name.clone(),
            reason,
        })?;
        Ok(FileDigest { sha256, size })
    }

    /// One release assembled from the files of `version`: metadata from the best
    /// file (a wheel with a PEP 658 file first, then any wheel, then `stand_in`, a wheel
    /// of the release that cannot install here, and an sdist last), `files` listed with
    /// hashes and yanked state.
    pub async fn fetch_release(
        &self,
        index: &IndexLocation,
        version: &Version,
        files: &[ProjectFile],
        stand_in: Option<&ProjectFile>,
    ) -> Result<Release, ClientError> {
        let source =
            metadata_source(files, stand_in).ok_or_else(|| ClientError::SdistMetadata {
                filename: files
                    .first()
                    .map(|file| file.filename.clone())
                    .unwrap_or_default(),
                index: index.name.clone(),
            })?;
        let metadata = self.fetch_metadata(index, source).await?;
        let requires_python = metadata
            .requires_python
            .or_else(|| source.requires_python.clone());
        let files = files
            .iter()
            .map(|file| {
                let mut recorded = dist_file(file);
                // The model keeps a file's own `Requires-Python` only where it differs.
                if recorded.requires_python == requires_python {
                    recorded.requires_python = None;
                }
                recorded
            })
            .collect();
        Ok(Release {
            provides_extra: metadata.provides_extra,
            version: version.clone(),
            requires_dist: metadata.requires_dist,
            requires_python,
            files,
            provenance: None,
        })
    }

    /// Read a wheel's `METADATA` with range requests, falling back to a download.
    async fn wheel_metadata(
        &self,
        index: &IndexLocation,
        file: &ProjectFile,
    ) -> Result<Vec<u8>, ClientError> {
        let metadata_error = |source| ClientError::Metadata {
            filename: file.filename.clone(),
            index: index.name.clone(),
            source: Box::new(source),
        };
        let first = self
            .http
            .range(&index.name, &file.url, ByteRange::Suffix(TAIL_BYTES))
            .await?;
        let (start, total, bytes) = match first {
            RangeResponse::Full(bytes) => {
                return read_wheel_metadata(std::io::Cursor::new(bytes), &file.filename)
                    .map_err(metadata_error);
            }
            RangeResponse::Partial {
                start,
                total,
                bytes,
            } => (start, total, bytes),
        };
        // A central directory larger than the tail (1.1 MiB for the 12 000 files of a
        // `torch` wheel) is fetched whole at once, not in growing windows.
        let directory = central_directory_start(&bytes)
            .filter(|offset| *offset < start && start - offset <= MAX_DIRECTORY_BYTES);
        let mut sparse = SparseFile::new(total);
        sparse.add(start, bytes);
        let mut ranges = Vec::new();
        if let Some(offset) = directory {
            ranges.push(ByteRange::Bounded(offset, start - 1));
        }
        let mut want = TAIL_BYTES;
        // One pass more than the rounds: the last window fetched is read too.
        for _ in 0..=MAX_RANGE_ROUNDS {
            for range in ranges.drain(..) {
                if let Some(whole) = self.range_into(index, file, range, &mut sparse).await? {
                    return read_wheel_metadata(std::io::Cursor::new(whole), &file.filename)
                        .map_err(metadata_error);
                }
            }
            let missing = Cell::new(None);
            let outcome = read_wheel_metadata(SparseReader::new(&sparse, &missing), &file.filename);
            let offset = match (outcome, missing.get()) {
                (Ok(bytes), _) => return Ok(bytes),
                (Err(_), Some(offset)) => offset,
                (Err(error), None) => return Err(metadata_error(error)),
            };
            let end = sparse
                .next_known_after(offset)
                .min(offset.saturating_add(want))
                .max(offset + 1);
            ranges.push(ByteRange::Bounded(offset, end - 1));
            want = want.saturating_mul(4);
        }
        Err(ClientError::Zip {
            url: redact(&file.url),
            index: index.name.clone(),
            reason: format!("the metadata was not found within {MAX_RANGE_ROUNDS} range requests"),
        })
    }

    /// Fetch `range` of `file` into `sparse`; the whole file when the server sent it
    /// whole instead.
    async fn range_into(
        &self,
        index: &IndexLocation,
        file: &ProjectFile,
        range: ByteRange,
        sparse: &mut SparseFile,
    ) -> Result<Option<Vec<u8>>, ClientError> {
        match self.http.range(&index.name, &file.url, range).await? {
            RangeResponse::Partial { start, bytes, .. } => {
                sparse.add(start, bytes);
                Ok(None)
            }
            RangeResponse::Full(bytes) => Ok(Some(bytes)),
        }
    }
}

/// What downloading a file gave: its digest and length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigest {
    /// The sha256 of the bytes served.
    pub sha256: Sha256,
    /// Their length in bytes.
    pub size: u64,
}

/// The file whose metadata stands for the release: a wheel with a PEP 658 file, any
/// file with one, any wheel, the stand-in, an sdist; `None` when there is no file.
fn metadata_source<'f>(
    files: &'f [ProjectFile],
    stand_in: Option<&'f ProjectFile>,
) -> Option<&'f ProjectFile> {
    let is_wheel = |file: &&ProjectFile| matches!(file.dist, DistFilename::Wheel(_));
    let offered = |file: &&ProjectFile| matches!(file.metadata, MetadataOffer::Offered(_));
    files
        .iter()
        .filter(is_wheel)
        .find(offered)
        .or_else(|| files.iter().find(offered))
        .or_else(|| files.iter().find(is_wheel))
        .or(stand_in)
        // Only sdists: their `PKG-INFO`, or the metadata their backend prepares.
        .or_else(|| files.first())
}

/// A listed file as the universe records it: no URL.
fn dist_file(file: &ProjectFile) -> DistFile {
    DistFile {
        filename: file.filename.clone(),
        sha256: file.sha256.clone(),
        yanked: file.yanked.clone(),
        requires_python: file.requires_python.clone(),
        size: file.size,
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use url::Url;

    use super::types::redact_str;
    use super::*;

    #[test]
    fn redaction() {
        let url = Url::parse("https://token:secret@mirror.example/simple/").unwrap();
        assert_eq!(redact(&url), "https://token:***@mirror.example/simple/");
        assert!(!redact_str("https://u:p@bad host/x").contains(":p@"));
        let query = Url::parse("https://mirror.example/simple/?token=abc").unwrap();
        assert_eq!(redact(&query), "https://mirror.example/simple/?token=***");
    }

    #[test]
    fn index_urls_end_in_a_slash() {
        let index = IndexLocation::new("default", "http://127.0.0.1:9/simple").unwrap();
        let name = PackageName::from_str("Flashinfer_Python").unwrap();
        assert_eq!(
            index.project_url(&name).unwrap().as_str(),
            "http://127.0.0.1:9/simple/flashinfer-python/"
        );
        assert!(IndexLocation::new("x", "file:///tmp").is_err());
    }
}
