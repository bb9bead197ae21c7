//! The universe of packages and where it comes from: snapshot files, find-links
//! directories and live indexes, with the digests recorded beside a manifest.

pub mod client;
pub mod filename;
pub mod find_links;
pub mod hashes;
pub mod metadata;
mod model;
pub mod pip_config;
pub mod pip_files;
pub mod pip_record;
pub mod pyproject;
pub mod requires_python;
pub mod snapshot;
pub mod tags;

pub use model::{DistFile, IndexContents, Release, Universe, UnusableFiles};
pub use snapshot::{EMBEDDED_SNAPSHOT_FILE, SNAPSHOT_SCHEMA, Snapshot, SnapshotError};
