//! The manifest: the pinned target stack, its schema, loading with located errors,
//! and the semantic diff of two manifests.

mod diff;
mod error;
mod load;
mod model;
pub mod yaml;

pub(crate) use diff::direction;
pub use diff::{Change, DiffEntry, ManifestDiff, Section, VersionDirection, diff};
pub use error::{Diagnostic, ManifestError};
pub use load::{ManifestSource, load, load_file, load_str};
pub use model::*;
