//! The manifest: the pinned target stack, its schema, loading with located errors,
//! and the semantic diff of two manifests.

mod diff;
mod error;
mod load;
mod model;
mod redact;
pub mod yaml;

pub(crate) use diff::direction;
pub use diff::{Change, DiffEntry, ManifestDiff, Section, VersionDirection, diff};
pub use error::{Diagnostic, ManifestError};
pub(crate) use load::is_variable_name;
pub use load::{
    GitFile, MAX_DURATION, MAX_MANIFEST_BYTES, ManifestSource, base_dir, load, load_file, load_str,
    load_with_text, parse_duration, read_git_file, read_text, validate_file,
};
pub use model::*;
/// The manifest's JSON Schema (draft 2020-12), `manifests/schema.json`: structure only;
/// the loader checks more (specifiers, references, paths) and names lines.
pub const JSON_SCHEMA: &str = include_str!("../../manifests/schema.json");

pub use redact::{
    MASK, Masking, RedactedUrl, has_credentials, mask_url, placeholder_name, redact_text,
    redact_url,
};
