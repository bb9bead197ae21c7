//! Whether the rule tables know a node's toolkit, runtime and GPUs: a value no row covers
//! is refused with the table to extend (in a user's rules directory), never passed over
//! in silence; and the known values nearest an unknown one, for `validate`'s messages.

use super::arch::CUDA_ARCH_FILE;
use super::driver::CUDA_DRIVER_FILE;
use super::runtime::CUDA_RUNTIME_FILE;
use super::{RuleSet, USER_RULES, file_name};
use crate::cuda::{CudaVersion, GpuArch};

/// A value of the node or the manifest that no rule row covers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleGap {
    /// A toolkit update without a driver minimum, e.g. 13.0.3 or 11.8.
    #[error(
        "CUDA toolkit {toolkit} has no row in `{file}`, so its minimum driver is unknown; add a row to `{file}` in {USER_RULES}: the update, its driver minimum and a `source:` (NVIDIA's release notes, \"CUDA Toolkit and Corresponding Driver Versions\")"
    )]
    ToolkitDriver {
        /// e.g. `13.0.3`.
        toolkit: CudaVersion,
        /// `cuda-driver.yaml`.
        file: &'static str,
    },
    /// A toolkit release line without an architecture row, e.g. 12.7.
    #[error(
        "CUDA toolkit {toolkit} has no release-line row in `{file}`, so the GPU architectures it supports are unknown; add a row to `{file}` in {USER_RULES}: the line `{line}` with its architectures and a `source:`"
    )]
    ToolkitArches {
        /// e.g. `12.7.1`.
        toolkit: CudaVersion,
        /// e.g. `12.7`.
        line: CudaVersion,
        /// `cuda-arch.yaml`.
        file: &'static str,
    },
    /// A GPU architecture no GPU has, e.g. `sm_91`, or a compilation target given as a GPU.
    #[error(
        "GPU architecture {arch} is not a GPU's compute capability listed in `{file}` (`architectures:`){hint}"
    )]
    Arch {
        /// e.g. `sm_91`.
        arch: GpuArch,
        /// e.g. `; sm_90a is a compilation target of sm_90, name the GPU as sm_90`.
        hint: String,
        /// `cuda-arch.yaml`.
        file: &'static str,
    },
    /// A CUDA runtime whose major has no minor-version-compatibility row, e.g. 14.0.
    #[error(
        "the CUDA runtime {runtime} belongs to CUDA {major}, which has no row under `majors:` in `{file}`; add a row to `{file}` in {USER_RULES}: its driver floor with a `source:`"
    )]
    RuntimeMajor {
        /// e.g. `14.0`.
        runtime: CudaVersion,
        /// e.g. `14`.
        major: u32,
        /// `cuda-runtime.yaml`.
        file: &'static str,
    },
}

impl RuleSet {
    /// Every gap the node's values fall into, e.g. toolkit 13.0.3 and `sm_91`; empty when
    /// each value has its row.
    pub fn gaps(
        &self,
        toolkit: Option<&CudaVersion>,
        runtime: Option<&CudaVersion>,
        archs: &[GpuArch],
    ) -> Vec<RuleGap> {
        let mut gaps = Vec::new();
        if let Some(toolkit) = toolkit {
            if self.drivers.minimum_for(toolkit).is_none() {
                gaps.push(RuleGap::ToolkitDriver {
                    toolkit: toolkit.clone(),
                    file: file_name(CUDA_DRIVER_FILE),
                });
            }
            if self.arches.support_for(toolkit).is_none() {
                gaps.push(RuleGap::ToolkitArches {
                    toolkit: toolkit.clone(),
                    line: toolkit.release(),
                    file: file_name(CUDA_ARCH_FILE),
                });
            }
        }
        if let Some(runtime) = runtime
            && self.runtimes.major(runtime.major()).is_none()
        {
            gaps.push(RuleGap::RuntimeMajor {
                runtime: runtime.clone(),
                major: runtime.major(),
                file: file_name(CUDA_RUNTIME_FILE),
            });
        }
        for arch in archs {
            let device = GpuArch::new(arch.major(), arch.minor());
            let hint = if arch.variant().is_some() && self.arches.known(&device).is_some() {
                format!("; {arch} is a compilation target of {device}: name the GPU as {device}")
            } else {
                let nearest = self.nearest_arches(arch);
                let nearest = nearest
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "; nearest: {nearest}; for a GPU the rules do not know yet, add a row to `{}` in {USER_RULES}",
                    file_name(CUDA_ARCH_FILE)
                )
            };
            if arch.variant().is_some() || self.arches.known(arch).is_none() {
                gaps.push(RuleGap::Arch {
                    arch: *arch,
                    hint,
                    file: file_name(CUDA_ARCH_FILE),
                });
            }
        }
        gaps
    }
}

impl RuleSet {
    /// Every CUDA toolkit release a table lists, ordered and once each: the updates of
    /// `cuda-updates.yaml` and the toolkits of `cuda-driver.yaml`, e.g. 12.0.0 … 13.5.0.
    pub fn toolkit_releases(&self) -> Vec<CudaVersion> {
        let mut releases: Vec<CudaVersion> = self
            .updates
            .rows()
            .iter()
            .map(|row| row.update.clone())
            .chain(self.drivers.rows().iter().map(|row| row.toolkit.clone()))
            .collect();
        releases.sort();
        releases.dedup();
        releases
    }

    /// Whether a table lists `toolkit` as a release, e.g. 13.0.1 (`12.8` is 12.8.0); not
    /// 12.7.0, which NVIDIA never released.
    pub fn knows_toolkit(&self, toolkit: &CudaVersion) -> bool {
        self.updates.update(toolkit).is_some() || self.drivers.minimum_for(toolkit).is_some()
    }

    /// The listed releases nearest `toolkit`: the one below and the one above, e.g.
    /// 12.7.0 → 12.6.3, 12.8.0.
    pub fn nearest_toolkits(&self, toolkit: &CudaVersion) -> Vec<CudaVersion> {
        let releases = self.toolkit_releases();
        let below = releases.iter().rev().find(|release| *release < toolkit);
        let above = releases.iter().find(|release| *release > toolkit);
        below.into_iter().chain(above).cloned().collect()
    }

    /// The GPU architectures (`architectures:`) nearest `arch` by compute capability:
    /// the one below and the one above, e.g. `sm_91` → `sm_90`, `sm_100`.
    pub fn nearest_arches(&self, arch: &GpuArch) -> Vec<GpuArch> {
        let mut known: Vec<GpuArch> = self
            .arches
            .architectures()
            .iter()
            .map(|known| known.name)
            .collect();
        known.sort();
        let device = GpuArch::new(arch.major(), arch.minor());
        let below = known.iter().rev().find(|known| **known < device);
        let above = known.iter().find(|known| **known > device);
        below.into_iter().chain(above).copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_values_name_their_table() {
        let rules = RuleSet::embedded().unwrap();
        let toolkit: CudaVersion = "13.0.3".parse().unwrap();
        let arch: GpuArch = "sm_91".parse().unwrap();
        let gaps = rules.gaps(Some(&toolkit), Some(&toolkit.release()), &[arch]);
        let text: Vec<String> = gaps.iter().map(ToString::to_string).collect();
        assert_eq!(gaps.len(), 2, "{text:?}");
        assert!(text[0].contains("cuda-driver.yaml"), "{text:?}");
        assert!(text[1].contains("sm_91") && text[1].contains("cuda-arch.yaml"));
        let known: CudaVersion = "12.6".parse().unwrap();
        let old: GpuArch = "sm_35".parse().unwrap();
        assert!(rules.gaps(Some(&known), Some(&known), &[old]).is_empty());
        let target: GpuArch = "sm_90a".parse().unwrap();
        let gaps = rules.gaps(None, None, &[target]);
        assert!(gaps[0].to_string().contains("name the GPU as sm_90"));
    }
}
