//! The snapshot file: a recorded universe, so `lock` and `plan` work offline.
//!
//! Format (JSON, `schema: 1`): a header saying when and how it was recorded, then the
//! [`Universe`]: indexes by manifest name, packages, releases, files. Only index
//! names, file names and hashes are kept — never a URL — so a snapshot can be shared
//! and committed without leaking where a mirror lives. Documented in
//! `manifests/README.md`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::Universe;

/// The snapshot shipped in the binary, so `lock` works offline on the shipped manifests.
pub const EMBEDDED_SNAPSHOT_FILE: &str = "manifests/snapshots/sglang-0.5.9-cu130.json";
const EMBEDDED_SNAPSHOT_JSON: &str =
    include_str!("../../manifests/snapshots/sglang-0.5.9-cu130.json");

/// The only snapshot schema this build reads.
pub const SNAPSHOT_SCHEMA: u32 = 1;

/// A recorded universe with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always [`SNAPSHOT_SCHEMA`].
    pub schema: u32,
    /// When it was recorded, e.g. `2026-12-02`.
    pub recorded: String,
    /// How it was recorded, e.g. `upgrade index snapshot manifests/x.yaml`.
    pub how: String,
    /// The recorded packages.
    pub universe: Universe,
}

/// Failed to read or write a snapshot file.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The JSON is not a snapshot.
    #[error("Failed to parse snapshot `{file}`")]
    Parse {
        /// e.g. `manifests/snapshots/sglang-0.5.9.json`.
        file: String,
        /// Located serde error (line and column).
        #[source]
        source: serde_json::Error,
    },
    /// The snapshot's schema is not one this build reads.
    #[error(
        "Failed to read snapshot `{file}`: schema `{schema}` is not supported (this build reads {SNAPSHOT_SCHEMA})"
    )]
    Schema {
        /// e.g. `snapshot.json`.
        file: String,
        /// The schema found.
        schema: u32,
    },
}

impl Snapshot {
    /// Parse a snapshot's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, SnapshotError> {
        let snapshot: Snapshot =
            serde_json::from_str(text).map_err(|source| SnapshotError::Parse {
                file: file.to_string(),
                source,
            })?;
        if snapshot.schema != SNAPSHOT_SCHEMA {
            return Err(SnapshotError::Schema {
                file: file.to_string(),
                schema: snapshot.schema,
            });
        }
        Ok(snapshot)
    }

    /// The snapshot embedded in the binary ([`EMBEDDED_SNAPSHOT_FILE`]).
    pub fn embedded() -> Result<Self, SnapshotError> {
        Self::parse(EMBEDDED_SNAPSHOT_JSON, EMBEDDED_SNAPSHOT_FILE)
    }

    /// Read a snapshot file.
    pub fn read(path: &Path) -> Result<Self, SnapshotError> {
        let text = fs_err::read_to_string(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Write a snapshot file atomically (temp file + rename), pretty-printed and stable.
    pub fn write(&self, path: &Path) -> Result<(), SnapshotError> {
        let mut text =
            serde_json::to_string_pretty(self).map_err(|source| SnapshotError::Parse {
                file: path.display().to_string(),
                source,
            })?;
        text.push('\n');
        let temporary = path.with_extension("json.tmp");
        fs_err::write(&temporary, text)?;
        fs_err::rename(&temporary, path)?;
        Ok(())
    }
}
