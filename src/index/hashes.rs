//! Recorded digests: the sha256 of locked files that no snapshot has, kept in a file
//! beside the manifest so `lock`, `plan` and `apply` find them without a flag.
//!
//! `upgrade index hash MANIFEST` downloads each locked file that has no sha256 from its
//! index and records the digest of the bytes served in `NAME.hashes.json` next to
//! `NAME.yaml`, to be reviewed and committed with the manifest. Resolving the manifest
//! lays the file over the snapshot: a file that has no sha256 takes the recorded one;
//! a file whose sha256 differs from the recorded one is an error, never a silent
//! choice. Like a snapshot, it keeps index names, file names and digests, never a URL.
//! Format (`schema: 1`), documented in `manifests/snapshots/README.md`:
//!
//! ```json
//! {
//!   "schema": 1,
//!   "files": [
//!     { "index": "pytorch-cu130",
//!       "filename": "torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
//!       "sha256": "…", "size": 1048576, "recorded": "2026-12-03",
//!       "how": "upgrade index hash: downloaded from index `pytorch-cu130`" }
//!   ]
//! }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::Universe;
use crate::index::filename::DistFileName;
use crate::manifest::Sha256;
use crate::text::Line;

/// The only schema of a hashes file this build reads and writes.
pub const HASHES_SCHEMA: u32 = 1;

/// The digests recorded for one manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedHashes {
    /// Always [`HASHES_SCHEMA`].
    pub schema: u32,
    /// One entry per file, sorted by index then file name.
    pub files: Vec<RecordedHash>,
}

/// The digest of one file of one index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedHash {
    /// The manifest's name for the index, e.g. `pytorch-cu130`.
    pub index: Line,
    /// e.g. `torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
    pub filename: DistFileName,
    /// The sha256 of the bytes the index served.
    pub sha256: Sha256,
    /// Their length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// When it was recorded, e.g. `2026-12-03`.
    pub recorded: Line,
    /// How, e.g. ``upgrade index hash: downloaded from index `pytorch-cu130` ``.
    pub how: Line,
}

/// Failed to read, apply or write a hashes file.
#[derive(Debug, thiserror::Error)]
pub enum HashesError {
    /// The file could not be read or written.
    #[error("Failed to use the recorded digests `{}`", path.display())]
    Io {
        /// e.g. `manifests/sglang-0.5.9-cu130.hashes.json`.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The JSON is not a hashes file.
    #[error("Failed to parse the recorded digests `{}`", path.display())]
    Parse {
        /// e.g. `manifests/sglang-0.5.9-cu130.hashes.json`.
        path: PathBuf,
        /// Located serde error (line and column).
        #[source]
        source: serde_json::Error,
    },
    /// The file's schema is not one this build reads.
    #[error(
        "Failed to read the recorded digests `{}`: schema `{schema}` is not supported (this build reads {HASHES_SCHEMA})",
        path.display()
    )]
    Schema {
        /// e.g. `manifests/sglang-0.5.9-cu130.hashes.json`.
        path: PathBuf,
        /// The schema found.
        schema: u32,
    },
    /// A recorded digest contradicts the snapshot's digest of the same file.
    #[error(
        "Failed to use the recorded digests `{}`: `{filename}` of index `{index}` is recorded as sha256 `{recorded}`, but the snapshot says `{snapshot}`; the file changed on the index or one record is wrong — remove the stale entry and record it again",
        path.display()
    )]
    Conflict {
        /// e.g. `manifests/sglang-0.5.9-cu130.hashes.json`.
        path: PathBuf,
        /// e.g. `pytorch-cu130`.
        index: String,
        /// e.g. `torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        filename: String,
        /// The digest in the hashes file.
        recorded: String,
        /// The digest in the snapshot.
        snapshot: String,
    },
}

impl RecordedHashes {
    /// Where the digests of `manifest` live: `NAME.hashes.json` beside `NAME.yaml`, e.g.
    /// `manifests/sglang-0.5.9-cu130.hashes.json`.
    pub fn path_for(manifest: &Path) -> PathBuf {
        let stem = manifest
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        manifest.with_file_name(format!("{stem}.hashes.json"))
    }

    /// Read the file at `path`; `None` when there is none.
    pub fn read_optional(path: &Path) -> Result<Option<Self>, HashesError> {
        let text = match fs_err::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(HashesError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let hashes: Self = serde_json::from_str(&text).map_err(|source| HashesError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        if hashes.schema != HASHES_SCHEMA {
            return Err(HashesError::Schema {
                path: path.to_path_buf(),
                schema: hashes.schema,
            });
        }
        Ok(Some(hashes))
    }

    /// Give every file of `universe` that has no sha256 its recorded one; `path` names
    /// this file in errors. Returns how many files took a digest from here. Entries for
    /// files the universe does not list are left unused.
    pub fn apply(&self, universe: &mut Universe, path: &Path) -> Result<usize, HashesError> {
        let mut applied = 0;
        for entry in &self.files {
            let Some(index) = universe
                .indexes
                .iter_mut()
                .find(|index| entry.index == index.name)
            else {
                continue;
            };
            let files = index
                .packages
                .values_mut()
                .flatten()
                .flat_map(|release| release.files.iter_mut())
                .filter(|file| entry.filename == file.filename);
            for file in files {
                match &file.sha256 {
                    None => {
                        file.sha256 = Some(entry.sha256.clone());
                        if file.size.is_none() {
                            file.size = entry.size;
                        }
                        applied += 1;
                    }
                    Some(known) if known == &entry.sha256 => {}
                    Some(known) => {
                        return Err(HashesError::Conflict {
                            path: path.to_path_buf(),
                            index: entry.index.to_string(),
                            filename: entry.filename.to_string(),
                            recorded: entry.sha256.to_string(),
                            snapshot: known.to_string(),
                        });
                    }
                }
            }
        }
        Ok(applied)
    }

    /// Add or replace the entry of `entry.index` / `entry.filename`, keeping the order.
    pub fn record(&mut self, entry: RecordedHash) {
        self.files
            .retain(|file| !(file.index == entry.index && file.filename == entry.filename));
        self.files.push(entry);
        self.files.sort_by(|a, b| {
            (a.index.as_str(), a.filename.as_str()).cmp(&(b.index.as_str(), b.filename.as_str()))
        });
    }

    /// Write the file atomically (temp file + rename), pretty-printed and stable.
    pub fn write(&self, path: &Path) -> Result<(), HashesError> {
        let io_error = |source| HashesError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self).map_err(|source| HashesError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        text.push('\n');
        crate::local_file::write_atomic(path, text.as_bytes()).map_err(io_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;
    use crate::index::{DistFile, IndexContents, Release};

    fn digest(digit: char) -> Sha256 {
        Sha256::from_str(&digit.to_string().repeat(64)).unwrap()
    }

    fn universe(sha256: Option<Sha256>) -> Universe {
        let release = Release {
            provides_extra: Vec::new(),
            version: pep440_rs::Version::from_str("2.9.1+cu130").unwrap(),
            requires_dist: Vec::new(),
            requires_python: None,
            files: vec![DistFile {
                filename: "torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
                    .to_string(),
                sha256,
                yanked: None,
                requires_python: None,
                size: None,
            }],
            provenance: None,
        };
        Universe {
            snapshot: None,
            indexes: vec![IndexContents {
                name: "pytorch-cu130".to_string(),
                packages: [(
                    pep508_rs::PackageName::from_str("torchaudio").unwrap(),
                    vec![release],
                )]
                .into_iter()
                .collect(),
                unusable: std::collections::BTreeMap::new(),
            }],
        }
    }

    fn entry(sha256: Sha256) -> RecordedHash {
        RecordedHash {
            index: Line::new("pytorch-cu130").unwrap(),
            filename: DistFileName::new(
                "torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            )
            .unwrap(),
            sha256,
            size: Some(12),
            recorded: Line::new("2026-12-03").unwrap(),
            how: Line::new("test").unwrap(),
        }
    }

    fn file_of(universe: &Universe) -> &DistFile {
        &universe.indexes[0].packages.values().next().unwrap()[0].files[0]
    }

    #[test]
    fn beside_the_manifest() {
        assert_eq!(
            RecordedHashes::path_for(Path::new("manifests/sglang-0.5.9-cu130.yaml")),
            Path::new("manifests/sglang-0.5.9-cu130.hashes.json")
        );
    }

    #[test]
    fn a_missing_digest_is_filled_in() {
        let mut hashes = RecordedHashes {
            schema: HASHES_SCHEMA,
            files: Vec::new(),
        };
        hashes.record(entry(digest('a')));
        let mut universe = universe(None);
        assert_eq!(hashes.apply(&mut universe, Path::new("h.json")).unwrap(), 1);
        assert_eq!(file_of(&universe).sha256, Some(digest('a')));
        assert_eq!(file_of(&universe).size, Some(12));
        // The same digest twice is no conflict, and nothing new is applied.
        assert_eq!(hashes.apply(&mut universe, Path::new("h.json")).unwrap(), 0);
    }

    #[test]
    fn a_contradicting_digest_is_refused() {
        let hashes = RecordedHashes {
            schema: HASHES_SCHEMA,
            files: vec![entry(digest('a'))],
        };
        let mut universe = universe(Some(digest('b')));
        let error = hashes
            .apply(&mut universe, Path::new("h.json"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("recorded as sha256 `aaaa"), "{error}");
        assert!(error.contains("the snapshot says `bbbb"), "{error}");
    }

    #[test]
    fn recording_again_replaces_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.hashes.json");
        assert_eq!(RecordedHashes::read_optional(&path).unwrap(), None);
        let mut hashes = RecordedHashes {
            schema: HASHES_SCHEMA,
            files: Vec::new(),
        };
        hashes.record(entry(digest('a')));
        hashes.record(entry(digest('c')));
        assert_eq!(hashes.files.len(), 1);
        hashes.write(&path).unwrap();
        let read = RecordedHashes::read_optional(&path).unwrap().unwrap();
        assert_eq!(read, hashes);
        assert!(!std::fs::read_to_string(&path).unwrap().contains("://"));
    }
}
