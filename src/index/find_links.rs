//! A find-links directory (pip's `--find-links DIR`): a flat directory of wheels and
//! sdists read as one index's [`IndexContents`].
//!
//! Each wheel's `*.dist-info/METADATA` is read from the zip and each file's sha256 is
//! computed. An sdist joins the release of a wheel of the same version; a `.zip` sdist
//! with no wheel beside it is read through its `PKG-INFO`; a `.tar.gz` sdist with no
//! wheel beside it is skipped with a note (reading it would need a tar reader, and
//! building it is never done here). Only the directory's top level is read.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::PackageName;
use sha2::Digest;

use super::filename::{DistFilename, FilenameError};
use super::metadata::{CoreMetadata, MetadataError, read_wheel_metadata};
use super::model::{DistFile, IndexContents, Release};
use crate::manifest::Sha256;

/// Failed to read a find-links directory.
#[derive(Debug, thiserror::Error)]
pub enum FindLinksError {
    /// The directory or a file in it could not be read.
    #[error("Failed to read find-links directory `{}`", path.display())]
    Io {
        /// e.g. `/opt/wheels` or `/opt/wheels/six-1.17.0-py2.py3-none-any.whl`.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A wheel's metadata could not be read.
    #[error("Failed to read the metadata of `{}`", path.display())]
    Metadata {
        /// e.g. `/opt/wheels/six-1.17.0-py2.py3-none-any.whl`.
        path: PathBuf,
        /// Why.
        #[source]
        source: MetadataError,
    },
    /// The metadata names another project or version than the file name.
    #[error(
        "Failed to read `{}`: its metadata says `{metadata}` but its file name says `{filename}`",
        path.display()
    )]
    Mismatch {
        /// e.g. `/opt/wheels/a-1.0-py3-none-any.whl`.
        path: PathBuf,
        /// e.g. `b 2.0`.
        metadata: String,
        /// e.g. `a 1.0`.
        filename: String,
    },
}

/// What reading a find-links directory gave: the index's contents, and notes on the
/// files that were skipped, e.g. `skipped `x-1.0.tar.gz`: an sdist without a wheel`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FindLinks {
    /// The releases found, under the index name given.
    pub contents: IndexContents,
    /// One line per file skipped, in file-name order.
    pub notes: Vec<String>,
}

/// Read the directory `dir` as the index named `index_name`, e.g. `local-wheels`.
pub fn read_find_links(dir: &Path, index_name: &str) -> Result<FindLinks, FindLinksError> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| FindLinksError::Io { path, source }
    };
    let mut entries: Vec<PathBuf> = Vec::new();
    for entry in fs_err::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        if entry
            .file_type()
            .map_err(io_error(&entry.path()))?
            .is_file()
        {
            entries.push(entry.path());
        }
    }
    entries.sort();

    let mut notes = Vec::new();
    // (name, version) → (metadata, files); sdists wait until every wheel is read.
    let mut releases: BTreeMap<(PackageName, Version), (Option<CoreMetadata>, Vec<DistFile>)> =
        BTreeMap::new();
    let mut sdists = Vec::new();
    for path in entries {
        let Some(filename) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        let dist = match DistFilename::parse(filename) {
            Ok(dist) => dist,
            Err(FilenameError { .. }) => {
                if is_distribution_like(filename) {
                    notes.push(format!(
                        "skipped `{filename}`: not a distribution file name"
                    ));
                }
                continue;
            }
        };
        match dist {
            DistFilename::Wheel(wheel) => {
                let (bytes, file) = read_file(&path, filename)?;
                let metadata_bytes = read_wheel_metadata(std::io::Cursor::new(&bytes), filename)
                    .map_err(|source| FindLinksError::Metadata {
                        path: path.clone(),
                        source,
                    })?;
                let metadata =
                    CoreMetadata::parse(&metadata_bytes, filename).map_err(|source| {
                        FindLinksError::Metadata {
                            path: path.clone(),
                            source,
                        }
                    })?;
                check_matches(&path, &metadata, &wheel.name, &wheel.version)?;
                let slot = releases
                    .entry((wheel.name.clone(), wheel.version.clone()))
                    .or_default();
                if slot.0.is_none() {
                    slot.0 = Some(metadata);
                }
                slot.1.push(file);
            }
            DistFilename::Sdist(sdist) => sdists.push((path.clone(), sdist)),
        }
    }
    for (path, sdist) in sdists {
        let filename = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default()
            .to_string();
        let key = (sdist.name.clone(), sdist.version.clone());
        if let Some(slot) = releases.get_mut(&key) {
            let (_, file) = read_file(&path, &filename)?;
            slot.1.push(file);
            continue;
        }
        if !filename.ends_with(".zip") {
            notes.push(format!(
                "skipped `{filename}`: an sdist without a wheel of the same version (its metadata is read only from `.zip` sdists)"
            ));
            continue;
        }
        let (bytes, file) = read_file(&path, &filename)?;
        let pkg_info =
            read_sdist_pkg_info(&bytes, &filename).map_err(|source| FindLinksError::Metadata {
                path: path.clone(),
                source,
            })?;
        let metadata = CoreMetadata::parse(&pkg_info, &filename).map_err(|source| {
            FindLinksError::Metadata {
                path: path.clone(),
                source,
            }
        })?;
        check_matches(&path, &metadata, &sdist.name, &sdist.version)?;
        releases.insert(key, (Some(metadata), vec![file]));
    }

    let mut contents = IndexContents {
        name: index_name.to_string(),
        packages: BTreeMap::new(),
        unusable: BTreeMap::new(),
    };
    for ((name, version), (metadata, mut files)) in releases {
        let Some(metadata) = metadata else {
            continue;
        };
        files.sort_by(|a, b| a.filename.cmp(&b.filename));
        contents.packages.entry(name).or_default().push(Release {
            provides_extra: metadata.provides_extra,
            version,
            requires_dist: metadata.requires_dist,
            requires_python: metadata.requires_python,
            files,
            provenance: None,
        });
    }
    Ok(FindLinks { contents, notes })
}

/// Read a file whole and describe it: name, sha256, size.
fn read_file(path: &Path, filename: &str) -> Result<(Vec<u8>, DistFile), FindLinksError> {
    let bytes = fs_err::read(path).map_err(|source| FindLinksError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let digest = hex::encode(sha2::Sha256::digest(&bytes));
    let file = DistFile {
        filename: filename.to_string(),
        sha256: Sha256::from_str(&digest).ok(),
        yanked: None,
        requires_python: None,
        size: u64::try_from(bytes.len()).ok(),
    };
    Ok((bytes, file))
}

/// The `PKG-INFO` of a `.zip` sdist: `{name}-{version}/PKG-INFO`, the shallowest one.
fn read_sdist_pkg_info(bytes: &[u8], filename: &str) -> Result<Vec<u8>, MetadataError> {
    let zip_error = |source| MetadataError::Zip {
        file: filename.to_string(),
        source,
    };
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(zip_error)?;
    let entry = archive
        .file_names()
        .filter_map(Result::ok)
        .filter(|name| name.ends_with("/PKG-INFO") && name.matches('/').count() == 1)
        .map(|name| name.into_owned())
        .min()
        .ok_or_else(|| MetadataError::NoEntry {
            file: filename.to_string(),
        })?;
    let mut file = archive.by_name(&entry).map_err(zip_error)?;
    let mut out = Vec::new();
    file.read_to_end(&mut out)
        .map_err(|source| zip_error(zip::result::ZipError::Io(source)))?;
    Ok(out)
}

fn check_matches(
    path: &Path,
    metadata: &CoreMetadata,
    name: &PackageName,
    version: &Version,
) -> Result<(), FindLinksError> {
    if &metadata.name == name && &metadata.version == version {
        return Ok(());
    }
    Err(FindLinksError::Mismatch {
        path: path.to_path_buf(),
        metadata: format!("{} {}", metadata.name, metadata.version),
        filename: format!("{name} {version}"),
    })
}

/// Whether a file looks like it meant to be a distribution, so a bad name is noted
/// rather than silently ignored, e.g. `torch.whl`.
fn is_distribution_like(filename: &str) -> bool {
    [".whl", ".tar.gz", ".zip"]
        .iter()
        .any(|suffix| filename.ends_with(suffix))
}
