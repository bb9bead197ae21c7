//! `upgrade index hash`: resolve the manifest for a node exactly as `plan` does (the
//! same snapshot, the digests already recorded beside the manifest, the node's facts),
//! take each locked index file that still has no sha256, find it on its index's project
//! page and record the sha256 of the bytes the index serves in the manifest's hashes
//! file (`index::hashes`), written after every file so a later failure keeps what was
//! recorded.

use std::path::Path;
use std::str::FromStr;

use pep508_rs::PackageName;
use serde::Serialize;

use crate::converge;
use crate::index::client::{ClientSettings, IndexClient, IndexLocation, redact};
use crate::index::hashes::{HASHES_SCHEMA, RecordedHash, RecordedHashes};
use crate::index::pip_config;
use crate::manifest::Manifest;
use crate::resolve::{LockedSource, TargetEnvironment};
use crate::rules::RuleSet;

use super::RecordError;

/// What to record digests for.
pub struct HashRequest<'a> {
    /// The manifest as read.
    pub manifest: &'a Manifest,
    /// Its file; the hashes file lies beside it.
    pub manifest_path: &'a Path,
    /// The node the manifest is resolved for.
    pub environment: &'a TargetEnvironment,
    /// A snapshot instead of the embedded one.
    pub snapshot: Option<&'a Path>,
    /// Only these packages (normalized or not); empty: every unhashed locked file.
    pub packages: &'a [String],
    /// How to talk to the indexes.
    pub client: ClientSettings,
    /// The interpreter whose pip configuration names the default index.
    pub python: &'a Path,
}

/// One file whose digest was recorded, e.g. torchaudio's wheel from `pytorch-cu130`.
#[derive(Debug, Serialize)]
pub struct HashedFile {
    /// e.g. `torchaudio`.
    pub package: String,
    /// e.g. `2.9.1+cu130`.
    pub version: String,
    /// e.g. `pytorch-cu130`.
    pub index: String,
    /// The wheel or sdist file name.
    pub filename: String,
    /// Hex digest of the bytes the index served.
    pub sha256: String,
    /// Their length.
    pub size: u64,
}

/// What one `index hash` run recorded.
#[derive(Debug, Serialize)]
pub struct HashReport {
    /// The hashes file written, e.g. `manifests/seed.hashes.json`.
    pub file: String,
    /// The files recorded, in lock order.
    pub recorded: Vec<HashedFile>,
    /// Named with `--package` but already with a sha256, e.g. `torch`.
    pub already_hashed: Vec<String>,
}

/// A locked index file without a sha256.
struct Unhashed {
    package: String,
    version: String,
    index: crate::text::Line,
    filename: crate::index::filename::DistFileName,
}

/// Record the missing digests: see the module's documentation.
pub async fn record_hashes(request: HashRequest<'_>) -> Result<HashReport, RecordError> {
    let HashRequest {
        manifest,
        manifest_path,
        environment,
        snapshot,
        packages,
        client,
        python,
    } = request;
    let manifest_file = manifest_path.display().to_string();
    let universe = converge::universe_for(manifest_path, snapshot)?;
    let rules = RuleSet::load(manifest.rules.as_deref()).map_err(converge::ConvergeError::from)?;
    let locked = converge::resolve_lock(manifest, &manifest_file, environment, &universe, &rules)
        .map_err(converge::ConvergeError::Resolve)?;
    let hashes_path = RecordedHashes::path_for(manifest_path);
    let mut recorded = RecordedHashes::read_optional(&hashes_path)?.unwrap_or(RecordedHashes {
        schema: HASHES_SCHEMA,
        files: Vec::new(),
    });

    let named: Vec<String> = packages
        .iter()
        .map(|name| {
            PackageName::from_str(name)
                .map(|name| name.to_string())
                .map_err(|source| RecordError::Requirement {
                    name: name.clone(),
                    source: Box::new(source),
                })
        })
        .collect::<Result<_, _>>()?;
    for name in &named {
        let is_index_package = locked
            .package(name)
            .is_some_and(|package| matches!(package.source, LockedSource::Index { .. }));
        if !is_index_package {
            return Err(RecordError::NotLocked {
                package: name.clone(),
                manifest: manifest_file,
            });
        }
    }
    let mut wanted = Vec::new();
    let mut already_hashed = Vec::new();
    for package in &locked.packages {
        let Some((index, file, sha256)) = package.index_file() else {
            continue;
        };
        if !named.is_empty() && !named.contains(&package.name.to_string()) {
            continue;
        }
        if sha256.is_some() {
            if !named.is_empty() {
                already_hashed.push(package.name.to_string());
            }
            continue;
        }
        wanted.push(Unhashed {
            package: package.name.to_string(),
            version: package.version.to_string(),
            index: index.clone(),
            filename: file.clone(),
        });
    }

    let client = IndexClient::new(client)?;
    let mut report = HashReport {
        file: hashes_path.display().to_string(),
        recorded: Vec::new(),
        already_hashed,
    };
    for file in wanted {
        let url = match manifest
            .index(&file.index)
            .and_then(|entry| entry.url.clone())
        {
            Some(url) => url,
            None => pip_config::default_index(python.as_os_str())?.url,
        };
        let location = IndexLocation::new(&file.index, &url)?;
        let name =
            PackageName::from_str(&file.package).map_err(|source| RecordError::Requirement {
                name: file.package.clone(),
                source: Box::new(source),
            })?;
        let listed = client
            .fetch_project(&location, &name)
            .await?
            .into_iter()
            .flatten()
            .find(|listed| file.filename == listed.filename);
        let Some(listed) = listed else {
            return Err(RecordError::NotListed {
                filename: file.filename.to_string(),
                index: file.index.to_string(),
                url: location
                    .project_url(&name)
                    .map(|url| redact(&url))
                    .unwrap_or_else(|_| redact(&location.url))
                    .into(),
            });
        };
        let digest = client.file_digest(&location, &listed).await?;
        recorded.record(RecordedHash {
            index: file.index.clone(),
            filename: file.filename.clone(),
            sha256: digest.sha256.clone(),
            size: Some(digest.size),
            recorded: crate::text::Line::escaping(&crate::calendar::today()),
            how: crate::text::Line::escaping(&format!(
                "upgrade index hash: downloaded from index `{}`",
                file.index
            )),
        });
        recorded.write(&hashes_path)?;
        report.recorded.push(HashedFile {
            package: file.package,
            version: file.version,
            index: file.index.to_string(),
            filename: file.filename.to_string(),
            sha256: digest.sha256.to_string(),
            size: digest.size,
        });
    }
    Ok(report)
}

impl HashReport {
    /// The report as the text `index hash` prints.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for file in &self.recorded {
            text.push_str(&format!(
                "recorded `{}` (`{}=={}` from index `{}`, {} bytes): sha256 {}\n",
                file.filename, file.package, file.version, file.index, file.size, file.sha256
            ));
        }
        for name in &self.already_hashed {
            text.push_str(&format!("`{name}`: its locked file already has a sha256\n"));
        }
        if self.recorded.is_empty() {
            text.push_str("nothing to record: every locked file asked for has a sha256\n");
        } else {
            text.push_str(&format!(
                "wrote {} ({} file{} recorded); `lock`, `plan` and `apply` read it beside the manifest\n",
                self.file,
                self.recorded.len(),
                if self.recorded.len() == 1 { "" } else { "s" }
            ));
        }
        text
    }
}
