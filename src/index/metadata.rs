//! Core metadata (`METADATA`, `PKG-INFO`, PEP 658 `.metadata` files): the fields the
//! resolver needs, and finding `*.dist-info/METADATA` inside a wheel.
//!
//! Only `Name`, `Version`, `Requires-Dist`, `Requires-Python` and `Provides-Extra` are
//! read; every other header and the description body are skipped. This module does no
//! I/O of its own: callers hand it bytes or a `Read + Seek` over a wheel (a local file,
//! or the index client's partial view of a remote one).
//! See: https://packaging.python.org/en/latest/specifications/core-metadata/

use std::io::{Read, Seek};
use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{ExtraName, PackageName, Requirement};

/// The resolver-relevant fields of one distribution's core metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreMetadata {
    /// `Name`, normalized, e.g. `flashinfer-python`.
    pub name: PackageName,
    /// `Version`, e.g. `0.6.4`.
    pub version: Version,
    /// Every `Requires-Dist`, e.g. `torch==2.9.1; extra == "srt"`.
    pub requires_dist: Vec<Requirement>,
    /// `Requires-Python`, e.g. `>=3.10`.
    pub requires_python: Option<VersionSpecifiers>,
    /// Every `Provides-Extra`, e.g. `srt`.
    pub provides_extra: Vec<ExtraName>,
}

/// Failed to read core metadata.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// A required header is absent.
    #[error("Failed to parse the metadata of `{file}`: no `{field}` header")]
    Missing {
        /// e.g. `torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
        /// e.g. `Version`.
        field: &'static str,
    },
    /// A header's value does not parse.
    #[error("Failed to parse `{field}: {value}` in the metadata of `{file}`")]
    Field {
        /// e.g. `six-1.17.0-py2.py3-none-any.whl`.
        file: String,
        /// e.g. `Requires-Dist`.
        field: &'static str,
        /// The value as written, e.g. `foo (>=1.0`.
        value: String,
        /// Why it does not parse.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The wheel has no top-level `*.dist-info/METADATA` entry.
    #[error("Failed to find `*.dist-info/METADATA` in wheel `{file}`")]
    NoEntry {
        /// e.g. `six-1.17.0-py2.py3-none-any.whl`.
        file: String,
    },
    /// The wheel is not a readable zip archive.
    #[error("Failed to read wheel `{file}` as a zip archive")]
    Zip {
        /// e.g. `six-1.17.0-py2.py3-none-any.whl`.
        file: String,
        /// The zip error.
        #[source]
        source: zip::result::ZipError,
    },
}

impl CoreMetadata {
    /// Parse the headers of a `METADATA` / `PKG-INFO` file; `file` names it in errors,
    /// e.g. `sglang-0.5.9-py3-none-any.whl`.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Self, MetadataError> {
        let text = String::from_utf8_lossy(bytes);
        let mut name = None;
        let mut version = None;
        let mut requires_dist = Vec::new();
        let mut requires_python = None;
        let mut provides_extra = Vec::new();
        for (field, value) in headers(&text) {
            let field_error =
                |field: &'static str, source: Box<dyn std::error::Error + Send + Sync>| {
                    MetadataError::Field {
                        file: file.to_string(),
                        field,
                        value: value.clone(),
                        source,
                    }
                };
            match field.to_ascii_lowercase().as_str() {
                "name" => {
                    name = Some(
                        PackageName::from_str(value.trim())
                            .map_err(|e| field_error("Name", Box::new(e)))?,
                    );
                }
                "version" => {
                    version = Some(
                        Version::from_str(value.trim())
                            .map_err(|e| field_error("Version", Box::new(e)))?,
                    );
                }
                "requires-dist" => {
                    // Through the guard: the parser panics on some malformed requirements.
                    let requirement = crate::pep508::parse_requirement(value.trim())
                        .map_err(|e| field_error("Requires-Dist", Box::new(e)))?;
                    requires_dist.push(requirement);
                }
                "requires-python" => {
                    let trimmed = value.trim();
                    if !trimmed.is_empty() {
                        requires_python = Some(
                            VersionSpecifiers::from_str(trimmed)
                                .map_err(|e| field_error("Requires-Python", Box::new(e)))?,
                        );
                    }
                }
                "provides-extra" => {
                    // Legacy metadata sometimes spells extras that are not valid names;
                    // they cannot be requested by a valid requirement either.
                    if let Ok(extra) = ExtraName::from_str(value.trim()) {
                        provides_extra.push(extra);
                    }
                }
                _ => {}
            }
        }
        Ok(Self {
            name: name.ok_or_else(|| MetadataError::Missing {
                file: file.to_string(),
                field: "Name",
            })?,
            version: version.ok_or_else(|| MetadataError::Missing {
                file: file.to_string(),
                field: "Version",
            })?,
            requires_dist,
            requires_python,
            provides_extra,
        })
    }
}

/// The header fields of an RFC 822-style metadata file, up to the first blank line,
/// with continuation lines folded in, e.g. `("Requires-Dist", "torch==2.9.1")`.
fn headers(text: &str) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = fields.last_mut() {
                value.push('\n');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((field, value)) = line.split_once(':') {
            fields.push((field.trim().to_string(), value.trim().to_string()));
        }
    }
    fields
}

/// Read the bytes of the wheel's `*.dist-info/METADATA` entry; `filename` is the
/// wheel's file name, e.g. `six-1.17.0-py2.py3-none-any.whl`, used to choose between
/// several `.dist-info` directories and to name the wheel in errors.
pub fn read_wheel_metadata<R: Read + Seek>(
    reader: R,
    filename: &str,
) -> Result<Vec<u8>, MetadataError> {
    let zip_error = |source| MetadataError::Zip {
        file: filename.to_string(),
        source,
    };
    let mut archive = zip::ZipArchive::new(reader).map_err(zip_error)?;
    let names: Vec<String> = archive
        .file_names()
        .filter_map(Result::ok)
        .map(|name| name.into_owned())
        .collect();
    let entry = metadata_entry(names.iter().map(String::as_str), filename).ok_or_else(|| {
        MetadataError::NoEntry {
            file: filename.to_string(),
        }
    })?;
    let mut file = archive.by_name(&entry).map_err(zip_error)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|source| zip_error(zip::result::ZipError::Io(source)))?;
    Ok(bytes)
}

/// The `METADATA` entry among a wheel's entry names: top-level `X.dist-info/METADATA`,
/// preferring the directory whose project part matches the wheel's project, e.g.
/// `six-1.17.0.dist-info/METADATA` for `six-1.17.0-py2.py3-none-any.whl`.
pub fn metadata_entry<'a>(names: impl Iterator<Item = &'a str>, filename: &str) -> Option<String> {
    let project = filename
        .split('-')
        .next()
        .and_then(|name| PackageName::from_str(name).ok());
    let mut candidates: Vec<&str> = names
        .filter(|name| {
            name.strip_suffix(".dist-info/METADATA")
                .is_some_and(|directory| !directory.is_empty() && !directory.contains('/'))
        })
        .collect();
    candidates.sort_unstable();
    let matching = candidates.iter().find(|name| {
        let directory_project = name
            .split('-')
            .next()
            .map(|part| part.trim_end_matches(".dist-info/METADATA"))
            .and_then(|part| PackageName::from_str(part).ok());
        directory_project.is_some() && directory_project == project
    });
    matching
        .or(candidates.first())
        .map(|name| (*name).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA: &str = "Metadata-Version: 2.1\r\nName: Flashinfer_Python\nVersion: 0.6.4\nRequires-Python: >=3.9\nRequires-Dist: torch>=2.4\nRequires-Dist: ninja ; extra == \"jit\"\nProvides-Extra: jit\nLicense: long\n  continued\n\nRequires-Dist: not-a-header\n";

    #[test]
    fn fields_and_body() {
        let metadata = CoreMetadata::parse(METADATA.as_bytes(), "x.whl").unwrap();
        assert_eq!(metadata.name.to_string(), "flashinfer-python");
        assert_eq!(metadata.version.to_string(), "0.6.4");
        assert_eq!(metadata.requires_dist.len(), 2);
        assert_eq!(metadata.requires_dist[1].name.to_string(), "ninja");
        assert_eq!(metadata.requires_python.unwrap().to_string(), ">=3.9");
        assert_eq!(metadata.provides_extra.len(), 1);
    }

    #[test]
    fn missing_version_is_named() {
        let error = CoreMetadata::parse(b"Name: a\n", "a.whl").unwrap_err();
        assert_eq!(
            error.to_string(),
            "Failed to parse the metadata of `a.whl`: no `Version` header"
        );
    }

    #[test]
    fn bad_requirement_is_named() {
        let error = CoreMetadata::parse(b"Name: a\nVersion: 1\nRequires-Dist: b (>=1\n", "a.whl")
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("Failed to parse `Requires-Dist: b (>=1`")
        );
    }

    #[test]
    fn entry_prefers_own_project() {
        let names = [
            "vendored-1.0.dist-info/METADATA",
            "six-1.17.0.dist-info/METADATA",
            "six-1.17.0.dist-info/RECORD",
            "nested/x.dist-info/METADATA",
        ];
        assert_eq!(
            metadata_entry(names.into_iter(), "six-1.17.0-py2.py3-none-any.whl").as_deref(),
            Some("six-1.17.0.dist-info/METADATA")
        );
    }
}
