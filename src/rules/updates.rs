//! CUDA toolkit updates → the nvcc build each ships, and how NVIDIA's apt packages (and
//! its rpm packages, named alike) name and version a toolkit, from
//! `manifests/rules/cuda-updates.yaml`. Identifies a toolkit that carries no
//! `version.json` (installed from NVIDIA's apt or rpm packages, or copied from an image):
//! never guessing when several updates ship the same nvcc build.

use serde::Deserialize;

use super::error::RulesError;
use super::file::{At, Parsed, duplicate, layer};
use crate::cuda::CudaVersion;

/// The rule file, as embedded in the binary.
pub const CUDA_UPDATES_FILE: &str = "manifests/rules/cuda-updates.yaml";
pub(super) const CUDA_UPDATES_YAML: &str = include_str!("../../manifests/rules/cuda-updates.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdatesFile {
    schema: u32,
    #[serde(default)]
    apt: Option<AptNaming>,
    #[serde(default)]
    updates: Vec<UpdateRow>,
}

/// One row: a toolkit update and the nvcc build it ships, with where that is documented.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateRow {
    /// e.g. `13.0.2`.
    pub update: CudaVersion,
    /// e.g. `13.0.88` (`nvcc --version` prints `V13.0.88`).
    pub nvcc: CudaVersion,
    /// NVIDIA's release notes of the update.
    pub source: String,
    /// Where the value was read, e.g. NVIDIA's `version_13.0.2.json`.
    pub checked: String,
}

/// How NVIDIA's apt packages name a toolkit line, e.g. `cuda-toolkit-13-0` `13.0.2-1`
/// installing into `/usr/local/cuda-13.0`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptNaming {
    /// Meta packages whose upstream version is the toolkit update, e.g.
    /// `cuda-toolkit-{major}-{minor}`.
    pub meta_packages: Vec<String>,
    /// Where the packages install, e.g. `/usr/local/cuda-{major}.{minor}`.
    pub prefix: String,
    /// NVIDIA's Debian revision, e.g. `1` (`13.0.2-1`).
    pub revision: String,
    /// Where the naming is documented.
    pub source: String,
    /// Where the same naming of NVIDIA's rpm packages is documented (RHEL, Rocky, Alma,
    /// Fedora, SLES): same names and prefix, `VERSION-RELEASE` e.g. `13.0.2-1`.
    #[serde(default)]
    pub rpm_source: String,
}

/// What an nvcc build says about the update it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvccMatch<'a> {
    /// Exactly one update ships it.
    Exact(&'a UpdateRow),
    /// Several updates ship it (e.g. `13.0.88`: 13.0.1 and 13.0.2); never pick one.
    Ambiguous(Vec<&'a UpdateRow>),
    /// No listed update ships it.
    Unknown,
}

/// The table of updates, ordered by update, with the apt naming.
#[derive(Debug, Clone)]
pub struct UpdateTable {
    rows: Vec<UpdateRow>,
    apt: AptNaming,
}

/// The rows of one or more update files, each with where it was written, before the
/// checks of the whole table.
#[derive(Debug)]
pub(super) struct UpdateLayer {
    rows: Vec<(UpdateRow, At)>,
    apt: Option<(AptNaming, At)>,
    file: String,
}

impl UpdateLayer {
    /// Parse one file, with the checks of a file on its own.
    pub(super) fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        let mut parsed: Parsed<UpdatesFile> = super::file::parse(text, file)?;
        let rows = std::mem::take(&mut parsed.value.updates);
        let rows = parsed.rows("updates", rows);
        if let Some((row, at)) = duplicate(&rows, |row| row.update.clone()) {
            return Err(at.invalid(format!("update `{}` is listed twice", row.update)));
        }
        for (row, at) in &rows {
            if row.update.patch().is_none() {
                return Err(at.invalid(format!(
                    "update `{}` must be MAJOR.MINOR.PATCH, e.g. `13.0.0`",
                    row.update
                )));
            }
            if row.nvcc.release() != row.update.release() {
                return Err(at.invalid(format!(
                    "update `{}` lists nvcc `{}` of another release line",
                    row.update, row.nvcc
                )));
            }
            if !row.source.starts_with("https://") {
                return Err(at.invalid(format!("update `{}` has no https `source`", row.update)));
            }
        }
        let apt = parsed
            .value
            .apt
            .take()
            .map(|apt| (apt, parsed.section("apt")));
        if let Some((apt, at)) = &apt
            && (apt.meta_packages.is_empty()
                || apt
                    .meta_packages
                    .iter()
                    .chain(std::iter::once(&apt.prefix))
                    .any(|pattern| !pattern.contains("{major}") || !pattern.contains("{minor}")))
        {
            return Err(at.invalid(
                "`apt.meta_packages` and `apt.prefix` must each contain `{major}` and `{minor}`",
            ));
        }
        Ok(Self {
            rows,
            apt,
            file: file.to_string(),
        })
    }

    /// Lay a user's rows over these: the row of the same update is replaced, and a
    /// user's `apt:` replaces the whole naming.
    pub(super) fn layer(&mut self, over: Self) {
        layer(&mut self.rows, over.rows, |row| row.update.clone(), false);
        if over.apt.is_some() {
            self.apt = over.apt;
        }
    }

    /// The table.
    pub(super) fn build(self) -> Result<UpdateTable, RulesError> {
        let Some((apt, _)) = self.apt else {
            return Err(RulesError::Invalid {
                file: self.file,
                line: 1,
                message: "missing `apt:`, how NVIDIA's packages name a toolkit".to_string(),
            });
        };
        let mut rows: Vec<UpdateRow> = self.rows.into_iter().map(|(row, _)| row).collect();
        rows.sort_by(|a, b| a.update.cmp(&b.update));
        Ok(UpdateTable { rows, apt })
    }
}

impl UpdateTable {
    /// The table shipped in the binary, from the one parse of them ([`super::RuleSet::embedded`]).
    pub fn embedded() -> Result<Self, RulesError> {
        Ok(super::RuleSet::embedded()?.updates)
    }

    /// Parse a rule file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        UpdateLayer::parse(text, file)?.build()
    }

    /// The updates that ship nvcc `build`, e.g. `13.0.88` → 13.0.1 and 13.0.2 (ambiguous).
    pub fn for_nvcc(&self, build: &CudaVersion) -> NvccMatch<'_> {
        let found: Vec<&UpdateRow> = self.rows.iter().filter(|row| row.nvcc == *build).collect();
        match found.as_slice() {
            [] => NvccMatch::Unknown,
            [row] => NvccMatch::Exact(row),
            _ => NvccMatch::Ambiguous(found),
        }
    }

    /// The row of `update`, e.g. `13.0.1` → nvcc `13.0.88`.
    pub fn update(&self, update: &CudaVersion) -> Option<&UpdateRow> {
        self.rows.iter().find(|row| row.update == *update)
    }

    /// All rows, ordered by update.
    pub fn rows(&self) -> &[UpdateRow] {
        &self.rows
    }

    /// How NVIDIA's apt packages name a toolkit line.
    pub fn apt(&self) -> &AptNaming {
        &self.apt
    }
}

impl AptNaming {
    fn fill(pattern: &str, release: &CudaVersion) -> String {
        let (major, minor) = release
            .to_string()
            .split_once('.')
            .map(|(major, rest)| {
                (
                    major.to_string(),
                    rest.split('.').next().unwrap_or_default().to_string(),
                )
            })
            .unwrap_or_default();
        pattern
            .replace("{major}", &major)
            .replace("{minor}", &minor)
    }

    /// The meta packages of `release`'s line, e.g. 13.0 → `cuda-toolkit-13-0`, `cuda-13-0`, ….
    pub fn meta_packages_for(&self, release: &CudaVersion) -> Vec<String> {
        self.meta_packages
            .iter()
            .map(|pattern| Self::fill(pattern, &release.release()))
            .collect()
    }

    /// Where the packages of `release`'s line install, e.g. 13.0 → `/usr/local/cuda-13.0`.
    pub fn prefix_for(&self, release: &CudaVersion) -> String {
        Self::fill(&self.prefix, &release.release())
    }

    /// The release line a meta package name belongs to, e.g. `cuda-toolkit-13-0` → 13.0.
    pub fn meta_release(&self, package: &str) -> Option<CudaVersion> {
        self.meta_packages.iter().find_map(|pattern| {
            let (head, tail) = pattern.split_once("{major}-{minor}")?;
            let series = package.strip_prefix(head)?.strip_suffix(tail)?;
            let (major, minor) = series.split_once('-')?;
            format!("{major}.{minor}").parse().ok()
        })
    }

    /// The pinned apt version of a toolkit update, e.g. 13.0.1 → `13.0.1-1`.
    pub fn pinned_version(&self, update: &CudaVersion) -> String {
        format!("{update}-{}", self.revision)
    }
}

impl super::file::RuleFile for UpdatesFile {
    fn schema(&self) -> u32 {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> UpdateTable {
        UpdateTable::embedded().unwrap()
    }

    fn version(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    #[test]
    fn a_unique_nvcc_build_names_its_update() {
        for (nvcc, update) in [
            ("12.8.93", "12.8.1"),
            ("12.1.66", "12.1.0"),
            ("13.0.48", "13.0.0"),
            ("12.9.41", "12.9.0"),
        ] {
            match table().for_nvcc(&version(nvcc)) {
                NvccMatch::Exact(row) => assert_eq!(row.update.to_string(), update, "{nvcc}"),
                other => panic!("{nvcc}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_shared_nvcc_build_is_ambiguous_never_guessed() {
        // The real H200 node's `nvcc --version`: `V13.0.88`, shipped by 13.0.1 and 13.0.2.
        for (nvcc, updates) in [
            ("13.0.88", vec!["13.0.1", "13.0.2"]),
            ("12.9.86", vec!["12.9.1", "12.9.2"]),
            ("13.1.115", vec!["13.1.1", "13.1.2"]),
        ] {
            match table().for_nvcc(&version(nvcc)) {
                NvccMatch::Ambiguous(rows) => assert_eq!(
                    rows.iter()
                        .map(|row| row.update.to_string())
                        .collect::<Vec<_>>(),
                    updates
                ),
                other => panic!("{nvcc}: {other:?}"),
            }
        }
        assert_eq!(table().for_nvcc(&version("13.0.99")), NvccMatch::Unknown);
    }

    #[test]
    fn every_12_and_13_update_has_its_release_notes() {
        let rows = table();
        assert!(rows.rows().len() >= 38);
        for row in rows.rows() {
            assert_eq!(
                row.source,
                format!(
                    "https://docs.nvidia.com/cuda/archive/{}/cuda-toolkit-release-notes/index.html",
                    row.update
                )
            );
            assert!(!row.checked.is_empty());
        }
        assert!(rows.update(&version("13.0.2")).is_some());
    }

    #[test]
    fn apt_naming_of_a_release_line() {
        let table = table();
        let apt = table.apt();
        assert_eq!(
            apt.meta_packages_for(&version("13.0.2"))[0],
            "cuda-toolkit-13-0"
        );
        assert_eq!(apt.prefix_for(&version("13.0.1")), "/usr/local/cuda-13.0");
        assert_eq!(apt.pinned_version(&version("13.0.1")), "13.0.1-1");
        assert_eq!(apt.meta_release("cuda-toolkit-12-8"), Some(version("12.8")));
        assert_eq!(apt.meta_release("cuda-13-0"), Some(version("13.0")));
        assert_eq!(apt.meta_release("cuda-nvcc-13-0"), None);
        assert!(apt.source.starts_with("https://"));
        // NVIDIA's rpm packages: the same names, VERSION-RELEASE `13.0.2-1`.
        assert!(apt.rpm_source.starts_with("https://"));
        assert_eq!(
            apt.meta_release("cuda-compiler-13-0"),
            Some(version("13.0"))
        );
    }

    #[test]
    fn duplicates_and_foreign_nvcc_builds_are_refused() {
        let head = "schema: 1\napt:\n  meta_packages: [\"cuda-toolkit-{major}-{minor}\"]\n  prefix: /usr/local/cuda-{major}.{minor}\n  revision: \"1\"\n  source: https://x\nupdates:\n";
        let row = |update: &str, nvcc: &str| {
            format!(
                "  - update: \"{update}\"\n    nvcc: \"{nvcc}\"\n    source: https://x\n    checked: x\n"
            )
        };
        let twice = format!(
            "{head}{}{}",
            row("13.0.1", "13.0.88"),
            row("13.0.1", "13.0.88")
        );
        assert!(UpdateTable::parse(&twice, "t.yaml").is_err());
        let foreign = format!("{head}{}", row("13.0.1", "12.8.93"));
        assert!(UpdateTable::parse(&foreign, "t.yaml").is_err());
        let ok = format!("{head}{}", row("13.0.1", "13.0.88"));
        assert!(UpdateTable::parse(&ok, "t.yaml").is_ok());
    }
}
