//! `pyproject.toml` as the crate reads it: one TOML parser (`toml_edit`, as `tomllib`
//! and pip read the file) for every reader, and the `[build-system]` table of a source
//! the controller bundles (PEP 518).
//!
//! A build requirement names a package and a version range, nothing else: a direct
//! reference (`name @ URL`, a local path) is refused, because pip prepares one — runs
//! its build backend — even with `--only-binary=:all:`, and whatever reads these
//! requirements runs on the controller as the operator. The requirements go through
//! the guarded PEP 508 parser ([`crate::pep508::parse_requirement`]).
//!
//! See: https://peps.python.org/pep-0518/

use pep508_rs::{Requirement, VersionOrUrl};
use toml_edit::{Document, Item, Value};

/// What pip assumes for a project without `[build-system]` (PEP 518).
pub const DEFAULT_BUILD_REQUIRES: &str = "setuptools>=40.8.0";

/// A `pyproject.toml` larger than this is not read (one is a few KiB).
pub const MAX_PYPROJECT_BYTES: u64 = 1 << 20;

/// Failed to read the `[build-system]` table of a `pyproject.toml`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildSystemError {
    /// The file is not UTF-8 TOML (`tomllib` and pip refuse it too).
    #[error("Failed to parse `{file}` as TOML: {reason}")]
    Toml {
        /// e.g. `python/pyproject.toml`.
        file: String,
        /// The parser's message, on one line.
        reason: String,
    },
    /// `build-system` is there but is not a table.
    #[error("Failed to read `{file}`: `build-system` is not a table")]
    NotATable {
        /// e.g. `python/pyproject.toml`.
        file: String,
    },
    /// The table has no `requires` (pip refuses such a project, PEP 518).
    #[error("Failed to read `{file}`: its `[build-system]` table has no `requires` key")]
    NoRequires {
        /// e.g. `python/pyproject.toml`.
        file: String,
    },
    /// `requires` is not an array of strings.
    #[error("Failed to read `{file}`: `[build-system] requires` is not an array of strings")]
    NotStrings {
        /// e.g. `python/pyproject.toml`.
        file: String,
    },
    /// A requirement does not parse as PEP 508.
    #[error("Failed to parse the build requirement `{requirement}` of `{file}`: {reason}")]
    Invalid {
        /// e.g. `python/pyproject.toml`.
        file: String,
        /// As written (credentials in a URL masked, control characters escaped).
        requirement: String,
        /// The parser's message.
        reason: String,
    },
    /// A requirement is a direct reference: a URL or a local path.
    #[error(
        "Failed to accept the build requirement `{requirement}` of `{file}`: it is a direct reference (a URL or a path), which would be prepared, its code run, where the requirements are fetched; name a package and a version range from an index instead"
    )]
    DirectReference {
        /// e.g. `python/pyproject.toml`.
        file: String,
        /// As written (credentials in a URL masked, control characters escaped).
        requirement: String,
    },
}

/// Parse `text` as a TOML document, as every reader of `pyproject.toml` here does.
pub(crate) fn document(text: &str) -> Result<Document<&str>, toml_edit::TomlError> {
    Document::parse(text)
}

/// The strings of an array item, e.g. `requires = ["a", "b"]`; `None` when it is not an
/// array of strings.
pub(crate) fn strings(item: &Item) -> Option<Vec<&str>> {
    item.as_array()?.iter().map(Value::as_str).collect()
}

/// The build requirements of a project from its `pyproject.toml` (`None`: the project
/// has none), named `file` in errors: `[build-system] requires`, each a package name
/// with an optional version range, extras and marker. Without the file or the table,
/// [`DEFAULT_BUILD_REQUIRES`], as pip assumes; a table without `requires` is an error,
/// as pip makes it.
pub fn build_requires(
    pyproject: Option<&[u8]>,
    file: &str,
) -> Result<Vec<Requirement>, BuildSystemError> {
    let Some(bytes) = pyproject else {
        return Ok(vec![default_requirement()?]);
    };
    let toml_error = |reason: String| BuildSystemError::Toml {
        file: file.to_string(),
        reason: crate::text::text_value(reason.trim()),
    };
    let text = std::str::from_utf8(bytes).map_err(|error| toml_error(error.to_string()))?;
    let document = document(text).map_err(|error| toml_error(error.message().to_string()))?;
    let Some(table) = document.get("build-system") else {
        return Ok(vec![default_requirement()?]);
    };
    let table = table
        .as_table_like()
        .ok_or_else(|| BuildSystemError::NotATable {
            file: file.to_string(),
        })?;
    let requires = table
        .get("requires")
        .ok_or_else(|| BuildSystemError::NoRequires {
            file: file.to_string(),
        })?;
    let requires = strings(requires).ok_or_else(|| BuildSystemError::NotStrings {
        file: file.to_string(),
    })?;
    requires
        .into_iter()
        .map(|text| build_requirement(text, file))
        .collect()
}

/// One build requirement, checked: a name with an optional version range.
fn build_requirement(text: &str, file: &str) -> Result<Requirement, BuildSystemError> {
    let shown = || crate::text::text_value(&crate::manifest::redact_text(text.trim()));
    let requirement = crate::pep508::parse_requirement(text.trim()).map_err(|error| {
        BuildSystemError::Invalid {
            file: file.to_string(),
            requirement: shown(),
            reason: crate::manifest::redact_text(&error.to_string()),
        }
    })?;
    match &requirement.version_or_url {
        None | Some(VersionOrUrl::VersionSpecifier(_)) => Ok(requirement),
        Some(VersionOrUrl::Url(_)) => Err(BuildSystemError::DirectReference {
            file: file.to_string(),
            requirement: shown(),
        }),
    }
}

fn default_requirement() -> Result<Requirement, BuildSystemError> {
    crate::pep508::parse_requirement(DEFAULT_BUILD_REQUIRES).map_err(|error| {
        BuildSystemError::Invalid {
            file: "the default of PEP 518".to_string(),
            requirement: DEFAULT_BUILD_REQUIRES.to_string(),
            reason: error.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<String>, BuildSystemError> {
        build_requires(Some(text.as_bytes()), "pyproject.toml")
            .map(|found| found.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn build_requirements_come_from_the_build_system_table() {
        let pyproject = "[project]\nname = \"x\"\nrequires = [\"no\"]\n\n[build-system]\n# the backend\nrequires = [\n  \"setuptools>=61\",  # pinned low\n  'wheel',\n  \"scm[toml]>=8; python_version >= '3.8'\",\n]\nbuild-backend = \"setuptools.build_meta\"\n";
        assert_eq!(
            read(pyproject).unwrap(),
            [
                "setuptools>=61",
                "wheel",
                "scm[toml]>=8 ; python_full_version >= '3.8'"
            ]
        );
        assert_eq!(
            read("[build-system]\nrequires = []\n").unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            read("build-system = { requires = [\"flit_core>=3.2\"] }\n").unwrap(),
            ["flit-core>=3.2"]
        );
        assert_eq!(
            read("[project]\nname = \"x\"\n").unwrap(),
            [DEFAULT_BUILD_REQUIRES]
        );
        assert_eq!(
            build_requires(None, "pyproject.toml")
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [DEFAULT_BUILD_REQUIRES]
        );
    }

    /// See: issue 33: a `[build-system]` table written inside a multi-line string is
    /// text, as `tomllib`, pip and a reviewer read it; the project keeps pip's default.
    #[test]
    fn a_build_system_inside_a_multi_line_string_is_not_read() {
        for quote in ["\"\"\"", "'''"] {
            let hidden = format!(
                "[project]\nname = \"x\"\ndescription = {quote}\n[build-system]\nrequires = [\"evil @ https://evil.example/e.tar.gz\"]\n{quote}\n"
            );
            assert_eq!(read(&hidden).unwrap(), [DEFAULT_BUILD_REQUIRES], "{hidden}");
        }
        let after = "[project]\nreadme = \"\"\"\n[build-system]\nrequires = [\"evil\"]\n\"\"\"\n[build-system]\nrequires = [\"good\"]\n";
        assert_eq!(read(after).unwrap(), ["good"]);
    }

    /// See: issue 33: a file that does not parse, a table without `requires` and a
    /// `requires` that is not an array of strings are errors naming the file, never
    /// pip's default.
    #[test]
    fn an_unreadable_build_system_is_an_error() {
        for text in [
            "[build-system\nrequires = [\"setuptools\"]\n",
            "[build-system]\nrequires = [\"setuptools\"\n",
            "[build-system]\nrequires = [\"a\"]\nrequires = [\"b\"]\n",
            "[project]\nname = \"x\"\n[project]\nname = \"y\"\n",
        ] {
            let error = read(text).unwrap_err();
            assert!(
                matches!(error, BuildSystemError::Toml { .. }),
                "{text}: {error}"
            );
            assert!(error.to_string().contains("`pyproject.toml`"), "{error}");
        }
        let not_utf8 = build_requires(Some(b"[build-system]\nrequires = [\"\xff\"]\n"), "p.toml");
        assert!(matches!(not_utf8, Err(BuildSystemError::Toml { .. })));
        assert!(matches!(
            read("[build-system]\nbuild-backend = \"x\"\n"),
            Err(BuildSystemError::NoRequires { .. })
        ));
        assert!(matches!(
            read("build-system = 1\n"),
            Err(BuildSystemError::NotATable { .. })
        ));
        for requires in ["\"setuptools\"", "[1]", "[[\"a\"]]"] {
            assert!(matches!(
                read(&format!("[build-system]\nrequires = {requires}\n")),
                Err(BuildSystemError::NotStrings { .. })
            ));
        }
        let error = read("[build-system]\nrequires = [\"flash..==1\"]\n").unwrap_err();
        assert!(
            matches!(&error, BuildSystemError::Invalid { requirement, .. } if requirement == "flash..==1"),
            "{error}"
        );
    }

    /// See: issue 33: a direct reference is refused, named, with any credentials in
    /// its URL masked.
    #[test]
    fn a_direct_reference_is_refused_named() {
        for (written, shown) in [
            ("x @ file:///tmp/evil", "x @ file:///tmp/evil"),
            (
                "x @ https://evil.example/x-1.0.tar.gz",
                "x @ https://evil.example/x-1.0.tar.gz",
            ),
            (
                "x @ https://user:secret@evil.example/x-1.0-py3-none-any.whl ; python_version >= '3'",
                "x @ https://user:***@evil.example/x-1.0-py3-none-any.whl ; python_version >= '3'",
            ),
            (
                "x @ git+https://evil.example/x",
                "x @ git+https://evil.example/x",
            ),
        ] {
            let text = format!("[build-system]\nrequires = [\"setuptools\", \"{written}\"]\n");
            let error = read(&text).unwrap_err();
            let message = error.to_string();
            assert!(
                matches!(&error, BuildSystemError::DirectReference { requirement, .. } if requirement == shown),
                "{message}"
            );
            assert!(!message.contains("secret"), "{message}");
        }
        // A path is no package name.
        for written in ["./evil", "/tmp/evil", "../evil.tar.gz"] {
            let text = format!("[build-system]\nrequires = [\"{written}\"]\n");
            let error = read(&text).unwrap_err();
            assert!(error.to_string().contains(written), "{error}");
        }
    }
}
