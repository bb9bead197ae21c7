//! The PEP 621 `[project]` table of an sdist's `pyproject.toml`, read as the release's
//! metadata when its dependency fields are static, as uv reads it before building:
//! `dependencies`, `optional-dependencies` and `requires-python` are authoritative unless
//! `dynamic` names them. A dynamic `version` is taken from the sdist's file name (an
//! index's file names carry it). Anything else — no `[project]`, a dynamic dependency
//! field, Poetry's own tables without `dependencies`, a name that is not the sdist's, a
//! requirement that does not parse — answers `None`, and the caller builds the metadata.
//!
//! See: https://packaging.python.org/en/latest/specifications/pyproject-toml/

use std::fmt::Write as _;
use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{PackageName, Requirement};
use toml_edit::Item;

use crate::index::pyproject::{document, strings};

/// `METADATA` text from `pyproject.toml` when its dependency fields are static, for the
/// sdist of `name` `version`.
pub(super) fn static_metadata(
    text: &[u8],
    name: &PackageName,
    version: &Version,
) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    let document = document(text).ok()?;
    let project = document.get("project")?.as_table_like()?;
    let dynamic: Vec<&str> = match project.get("dynamic") {
        Some(item) => strings(item)?,
        None => Vec::new(),
    };
    if dynamic.iter().any(|field| {
        matches!(
            *field,
            "dependencies" | "optional-dependencies" | "requires-python"
        )
    }) {
        return None;
    }
    let declared = PackageName::from_str(project.get("name")?.as_str()?).ok()?;
    if declared != *name {
        return None;
    }
    match project.get("version").and_then(Item::as_str) {
        Some(declared) if Version::from_str(declared).ok()? == *version => {}
        Some(_) => return None,
        None if dynamic.contains(&"version") => {}
        None => return None,
    }
    // Poetry keeps dependencies in its own table; a `[project]` without them there is
    // not the whole story.
    let poetry = document
        .get("tool")
        .and_then(Item::as_table_like)
        .is_some_and(|tool| tool.contains_key("poetry"));
    if poetry && !project.contains_key("dependencies") {
        return None;
    }
    let mut metadata = format!("Metadata-Version: 2.2\nName: {declared}\nVersion: {version}\n");
    if let Some(item) = project.get("requires-python") {
        // Written as parsed, never as given: nothing of the file reaches the text raw.
        let specifiers = VersionSpecifiers::from_str(item.as_str()?).ok()?;
        let _ = writeln!(metadata, "Requires-Python: {specifiers}");
    }
    if let Some(item) = project.get("dependencies") {
        for requirement in requirements(item)? {
            let _ = writeln!(metadata, "Requires-Dist: {requirement}");
        }
    }
    if let Some(item) = project.get("optional-dependencies") {
        for (extra, item) in item.as_table_like()?.iter() {
            let extra = pep508_rs::ExtraName::from_str(extra).ok()?;
            let _ = writeln!(metadata, "Provides-Extra: {extra}");
            for requirement in requirements(item)? {
                let _ = writeln!(
                    metadata,
                    "Requires-Dist: {}",
                    with_extra(requirement, &extra)
                );
            }
        }
    }
    Some(metadata.into_bytes())
}

/// An array of PEP 508 strings, each checked to parse (by the guarded parser).
fn requirements(item: &Item) -> Option<Vec<Requirement>> {
    strings(item)?
        .into_iter()
        .map(|text| crate::pep508::parse_requirement(text).ok())
        .collect()
}

/// `requirement` under `extra == "…"`, its own marker kept.
fn with_extra(requirement: Requirement, extra: &pep508_rs::ExtraName) -> String {
    let marker = requirement.marker.try_to_string();
    let mut bare = requirement;
    bare.marker = pep508_rs::MarkerTree::TRUE;
    match marker {
        Some(marker) => format!("{bare} ; ({marker}) and extra == \"{extra}\""),
        None => format!("{bare} ; extra == \"{extra}\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::metadata::CoreMetadata;

    fn read(text: &str, version: &str) -> Option<CoreMetadata> {
        let name = PackageName::from_str("demo-pkg").unwrap();
        let version = Version::from_str(version).unwrap();
        let bytes = static_metadata(text.as_bytes(), &name, &version)?;
        Some(CoreMetadata::parse(&bytes, "demo_pkg-1.0.tar.gz").unwrap())
    }

    #[test]
    fn static_fields_become_metadata_with_the_file_names_version() {
        let metadata = read(
            r#"
[project]
name = "Demo_Pkg"
dynamic = ["version", "readme"]
requires-python = ">=3.9"
dependencies = ["numpy>=1.20", "typing-extensions; python_version < '3.11'"]
[project.optional-dependencies]
server = ["uvicorn>=0.11", "fastapi; sys_platform == 'linux'"]
"#,
            "1.0",
        )
        .unwrap();
        assert_eq!(metadata.version.to_string(), "1.0");
        assert_eq!(metadata.requires_python.unwrap().to_string(), ">=3.9");
        let requires: Vec<String> = metadata
            .requires_dist
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(requires.len(), 4, "{requires:?}");
        assert!(
            requires[3].contains("sys_platform == 'linux'")
                && requires[3].contains("extra == 'server'"),
            "{requires:?}"
        );
        assert_eq!(metadata.provides_extra.len(), 1);
    }

    #[test]
    fn nothing_raw_reaches_the_metadata_text() {
        let injected = "[project]\nname = \"demo-pkg\"\nversion = \"1.0\"\nrequires-python = \">=3.9\\nRequires-Dist: evil\"\n";
        assert!(read(injected, "1.0").is_none_or(|metadata| metadata.requires_dist.is_empty()));
    }

    #[test]
    fn dynamic_dependencies_poetry_or_another_name_are_not_static() {
        let dynamic =
            "[project]\nname = \"demo-pkg\"\nversion = \"1.0\"\ndynamic = [\"dependencies\"]\n";
        assert!(read(dynamic, "1.0").is_none());
        let poetry = "[project]\nname = \"demo-pkg\"\nversion = \"1.0\"\n[tool.poetry.dependencies]\nnumpy = \"*\"\n";
        assert!(read(poetry, "1.0").is_none());
        let other = "[project]\nname = \"other\"\nversion = \"1.0\"\n";
        assert!(read(other, "1.0").is_none());
        let no_version = "[project]\nname = \"demo-pkg\"\n";
        assert!(read(no_version, "1.0").is_none());
        let wrong_version = "[project]\nname = \"demo-pkg\"\nversion = \"2.0\"\n";
        assert!(read(wrong_version, "1.0").is_none());
        let bad = "[project]\nname = \"demo-pkg\"\nversion = \"1.0\"\ndependencies = [\"not a requirement!\"]\n";
        assert!(read(bad, "1.0").is_none());
        assert!(read("[build-system]\nrequires = []\n", "1.0").is_none());
        let empty = "[project]\nname = \"demo-pkg\"\nversion = \"1.0\"\n";
        assert!(read(empty, "1.0").unwrap().requires_dist.is_empty());
    }
}
