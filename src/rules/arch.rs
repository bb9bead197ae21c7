//! CUDA toolkit release line → the GPU architectures it supports, by name, from
//! `manifests/rules/cuda-arch.yaml`; and the list of real architectures, so that a name no
//! GPU has (`sm_91`) is refused rather than compared as a number.

use serde::Deserialize;

use super::error::RulesError;
use super::file::{At, Parsed, duplicate, layer};
use crate::cuda::{CudaVersion, GpuArch};

/// The rule file, as embedded in the binary.
pub const CUDA_ARCH_FILE: &str = "manifests/rules/cuda-arch.yaml";
pub(super) const CUDA_ARCH_YAML: &str = include_str!("../../manifests/rules/cuda-arch.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchFile {
    schema: u32,
    #[serde(default)]
    architectures: Vec<KnownArch>,
    #[serde(default)]
    renamed: Vec<RenamedArch>,
    #[serde(default)]
    toolkits: Vec<ArchSupport>,
}

/// A compute capability NVIDIA has shipped GPUs with, e.g. `sm_90` (H100, H200).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct KnownArch {
    /// e.g. `sm_90`.
    pub name: GpuArch,
    /// e.g. `Hopper (H100, H200, GH200)`.
    pub gpus: String,
    /// Where it is documented.
    pub source: String,
}

/// A name a toolkit line replaced, e.g. `sm_101` → `sm_110` from CUDA 13.0.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RenamedArch {
    /// e.g. `sm_101`.
    pub name: GpuArch,
    /// e.g. `sm_110`.
    pub now: GpuArch,
    /// The first release line using the new name, e.g. `13.0`.
    pub from: CudaVersion,
    /// Where it is documented.
    pub source: String,
}

/// One row: a toolkit release line and the architectures it supports, e.g. 13.0 →
/// `[sm_75, sm_80, …, sm_121f]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArchSupport {
    /// The release line, e.g. `13.0`; its updates share the row.
    pub toolkit: CudaVersion,
    /// Every architecture its compilers target, e.g. `sm_90`, `sm_90a`, `sm_100f`.
    pub arches: Vec<GpuArch>,
    /// Where it is documented, e.g. the nvcc guide's GPU feature list of CUDA 13.0.
    pub source: String,
}

impl ArchSupport {
    /// Whether `arch` is named in the row.
    pub fn supports(&self, arch: &GpuArch) -> bool {
        self.arches.contains(arch)
    }

    /// The device names of the row (no `a`/`f` targets), e.g. `sm_75, sm_80, …`.
    pub fn device_names(&self) -> String {
        self.arches
            .iter()
            .filter(|arch| arch.variant().is_none())
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The table of architecture support.
#[derive(Debug, Clone)]
pub struct ArchTable {
    known: Vec<KnownArch>,
    renamed: Vec<RenamedArch>,
    rows: Vec<ArchSupport>,
}

/// The rows of one or more architecture files, each with where it was written, before
/// the checks of the whole table.
#[derive(Debug)]
pub(super) struct ArchLayer {
    known: Vec<(KnownArch, At)>,
    renamed: Vec<(RenamedArch, At)>,
    rows: Vec<(ArchSupport, At)>,
}

impl ArchLayer {
    /// Parse one file, with the checks of a file on its own.
    pub(super) fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        let mut parsed: Parsed<ArchFile> = super::file::parse(text, file)?;
        let known = std::mem::take(&mut parsed.value.architectures);
        let renamed = std::mem::take(&mut parsed.value.renamed);
        let rows = std::mem::take(&mut parsed.value.toolkits);
        let layer = Self {
            known: parsed.rows("architectures", known),
            renamed: parsed.rows("renamed", renamed),
            rows: parsed.rows("toolkits", rows),
        };
        if let Some((row, at)) = duplicate(&layer.rows, |row| row.toolkit.release()) {
            return Err(at.invalid(format!("toolkit `{}` is listed twice", row.toolkit)));
        }
        if let Some((arch, at)) = duplicate(&layer.known, |arch| arch.name) {
            return Err(at.invalid(format!("architecture `{}` is listed twice", arch.name)));
        }
        if let Some((arch, at)) = layer
            .known
            .iter()
            .find(|(arch, _)| arch.name.variant().is_some())
        {
            return Err(at.invalid(format!(
                "`{}` is a compilation target, not a GPU: `architectures:` lists devices, e.g. `{}`",
                arch.name,
                device_of(&arch.name)
            )));
        }
        Ok(layer)
    }

    /// Lay a user's rows over these: the architecture, rename or release line of the
    /// same name is replaced.
    pub(super) fn layer(&mut self, over: Self) {
        layer(&mut self.known, over.known, |arch| arch.name, false);
        layer(
            &mut self.renamed,
            over.renamed,
            |renamed| renamed.name,
            false,
        );
        layer(
            &mut self.rows,
            over.rows,
            |row| row.toolkit.release(),
            false,
        );
    }

    /// The table: every architecture a release line names is a known one.
    pub(super) fn build(self) -> Result<ArchTable, RulesError> {
        let known: Vec<KnownArch> = self.known.into_iter().map(|(arch, _)| arch).collect();
        for (row, at) in &self.rows {
            if let Some(arch) = row
                .arches
                .iter()
                .find(|arch| !known.iter().any(|known| known.name == device_of(arch)))
            {
                return Err(at.invalid(format!(
                    "toolkit `{}` names `{arch}`, which is not under `architectures:`",
                    row.toolkit
                )));
            }
        }
        let mut rows: Vec<ArchSupport> = self.rows.into_iter().map(|(row, _)| row).collect();
        rows.sort_by(|a, b| a.toolkit.cmp(&b.toolkit));
        Ok(ArchTable {
            known,
            renamed: self
                .renamed
                .into_iter()
                .map(|(renamed, _)| renamed)
                .collect(),
            rows,
        })
    }
}

impl ArchTable {
    /// The table shipped in the binary, from the one parse of them ([`super::RuleSet::embedded`]).
    pub fn embedded() -> Result<Self, RulesError> {
        Ok(super::RuleSet::embedded()?.arches)
    }

    /// Parse a rule file's text.
    pub fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        ArchLayer::parse(text, file)?.build()
    }

    /// The row of `toolkit`'s release line, e.g. 13.0.1 → the 13.0 row; `None` when the
    /// line has no row.
    pub fn support_for(&self, toolkit: &CudaVersion) -> Option<&ArchSupport> {
        let line = toolkit.release();
        self.rows.iter().find(|row| row.toolkit.release() == line)
    }

    /// The real architecture of this name, e.g. `sm_90`; `None` for `sm_91`.
    pub fn known(&self, arch: &GpuArch) -> Option<&KnownArch> {
        self.known.iter().find(|known| known.name == *arch)
    }

    /// The rename that applies to `arch` on `toolkit`, e.g. `sm_101` on 13.0.
    pub fn renamed_on(&self, arch: &GpuArch, toolkit: &CudaVersion) -> Option<&RenamedArch> {
        self.renamed
            .iter()
            .find(|renamed| renamed.name == *arch && toolkit.release() >= renamed.from)
    }

    /// Every real architecture, as listed.
    pub fn architectures(&self) -> &[KnownArch] {
        &self.known
    }

    /// All rows, ordered by release line.
    pub fn rows(&self) -> &[ArchSupport] {
        &self.rows
    }
}

/// The device an architecture-specific or family target belongs to: `sm_90a` → `sm_90`.
fn device_of(arch: &GpuArch) -> GpuArch {
    GpuArch::new(arch.major(), arch.minor())
}

impl super::file::RuleFile for ArchFile {
    fn schema(&self) -> u32 {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(name: &str) -> GpuArch {
        name.parse().unwrap()
    }

    #[test]
    fn cuda_13_starts_at_turing() {
        let table = ArchTable::embedded().unwrap();
        let row = table.support_for(&"13.0.1".parse().unwrap()).unwrap();
        assert!(row.supports(&arch("sm_75")));
        assert!(!row.supports(&arch("sm_70")));
        assert!(row.supports(&arch("sm_110")));
        assert!(!row.supports(&arch("sm_101")));
        let row = table.support_for(&"12.8".parse().unwrap()).unwrap();
        assert!(row.supports(&arch("sm_50")));
        assert!(row.supports(&arch("sm_101")));
        assert!(table.support_for(&"11.8".parse().unwrap()).is_none());
        assert!(table.support_for(&"12.7".parse().unwrap()).is_none());
    }

    #[test]
    fn names_are_real_architectures() {
        let table = ArchTable::embedded().unwrap();
        assert!(table.known(&arch("sm_90")).is_some());
        assert!(table.known(&arch("sm_91")).is_none());
        let renamed = table
            .renamed_on(&arch("sm_101"), &"13.0.2".parse().unwrap())
            .unwrap();
        assert_eq!(renamed.now, arch("sm_110"));
        assert!(
            table
                .renamed_on(&arch("sm_101"), &"12.9".parse().unwrap())
                .is_none()
        );
    }

    #[test]
    fn every_line_from_12_0_has_a_row_with_a_source() {
        let table = ArchTable::embedded().unwrap();
        for line in [
            "12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9", "13.0", "13.1",
            "13.2", "13.3", "13.4", "13.5",
        ] {
            let row = table.support_for(&line.parse().unwrap()).unwrap();
            assert!(row.source.starts_with("https://"), "{line}");
        }
    }
}
