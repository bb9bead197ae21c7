//! CUDA toolkit release line → supported GPU architectures, from
//! `manifests/rules/cuda-arch.yaml`.

use serde::Deserialize;

use super::error::RulesError;
use crate::cuda::{CudaVersion, GpuArch};

/// The rule file, as embedded in the binary.
pub const CUDA_ARCH_FILE: &str = "manifests/rules/cuda-arch.yaml";
const CUDA_ARCH_YAML: &str = include_str!("../../manifests/rules/cuda-arch.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchFile {
    schema: u32,
    arch_support: Vec<ArchSupport>,
}

/// One row: a toolkit release line and the architectures it supports, e.g. 13.0 →
/// `sm_75` to `sm_121`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArchSupport {
    /// The release line, e.g. `13.0`; later updates of the line share the row.
    pub toolkit: CudaVersion,
    /// The oldest supported architecture, e.g. `sm_75`.
    pub oldest: GpuArch,
    /// The newest supported architecture, e.g. `sm_121`.
    pub newest: GpuArch,
    /// Where it is documented, e.g. the CUDA 13.0 release notes.
    pub source: String,
}

/// The table of architecture support, ordered by toolkit.
#[derive(Debug, Clone)]
pub struct ArchTable {
    rows: Vec<ArchSupport>,
}

impl ArchTable {
    /// The table shipped in the binary.
    pub fn embedded() -> Result<Self, RulesError> {
        Self::parse(CUDA_ARCH_YAML, CUDA_ARCH_FILE)
    }

    /// Parse a rule file's text.
    pub fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        let parsed: ArchFile = super::file::parse(text, file)?;
        let mut rows = parsed.arch_support;
        rows.sort_by(|a, b| a.toolkit.cmp(&b.toolkit));
        Ok(Self { rows })
    }

    /// The row for `toolkit`: the latest listed release line of the same major at or
    /// below it, e.g. 13.0.1 → the 13.0 row; `None` for an unlisted major.
    pub fn support_for(&self, toolkit: &CudaVersion) -> Option<&ArchSupport> {
        self.rows.iter().rev().find(|row| {
            row.toolkit.major() == toolkit.major() && row.toolkit.release() <= toolkit.release()
        })
    }

    /// All rows.
    pub fn rows(&self) -> &[ArchSupport] {
        &self.rows
    }
}

impl super::file::RuleFile for ArchFile {
    fn schema(&self) -> u32 {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_13_starts_at_turing() {
        let table = ArchTable::embedded().unwrap();
        let row = table.support_for(&"13.0.1".parse().unwrap()).unwrap();
        assert_eq!(row.oldest.to_string(), "sm_75");
        assert!(row.newest >= "sm_120".parse().unwrap());
        let row = table.support_for(&"12.8".parse().unwrap()).unwrap();
        assert_eq!(row.oldest.to_string(), "sm_50");
        assert!(table.support_for(&"11.8".parse().unwrap()).is_none());
    }
}
