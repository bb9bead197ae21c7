//! Recording what a manifest's resolution reads: the sha256 of locked index files that
//! have none (`upgrade index hash`, into the hashes file beside the manifest) and a
//! snapshot of the indexes for offline resolution (`upgrade index snapshot`, explored
//! from the manifest's roots or, with `--live`, exactly what a live resolution visited).
//! The verbs only turn flags into the requests here and print the reports.

mod error;
mod hash;
mod snapshot;

pub use error::RecordError;
pub use hash::{HashReport, HashRequest, HashedFile, record_hashes};
pub use snapshot::{
    IndexReport, LiveSnapshotRequest, SnapshotReport, SnapshotRequest, record_live_snapshot,
    record_snapshot,
};

use std::path::Path;

use crate::index::{SNAPSHOT_SCHEMA, Snapshot, Universe};

/// Write a snapshot of `universe` recorded today by the command line `how` to `output`.
fn write_snapshot(how: String, universe: Universe, output: &Path) -> Result<Snapshot, RecordError> {
    let snapshot = Snapshot {
        schema: SNAPSHOT_SCHEMA,
        recorded: crate::calendar::today(),
        how,
        universe,
    };
    snapshot
        .write(output)
        .map_err(|source| RecordError::Snapshot {
            path: output.to_path_buf(),
            source,
        })?;
    Ok(snapshot)
}

/// Credentials removed from a URL given as text, e.g. a `PIP_INDEX_URL`, with the one
/// masker; text that is not a URL is not shown at all.
pub fn redact_text(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(_) => crate::manifest::redact_url(url),
        Err(_) => "(an unparseable URL)".to_string(),
    }
}
