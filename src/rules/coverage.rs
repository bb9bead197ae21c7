//! Whether the rule tables know a node's toolkit, runtime and GPUs: a value no row covers
//! is refused with the table to extend, never passed over in silence.

use super::RuleSet;
use super::arch::CUDA_ARCH_FILE;
use super::driver::CUDA_DRIVER_FILE;
use super::runtime::CUDA_RUNTIME_FILE;
use crate::cuda::{CudaVersion, GpuArch};

/// A value of the node or the manifest that no rule row covers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleGap {
    /// A toolkit update without a driver minimum, e.g. 13.0.3 or 11.8.
    #[error(
        "CUDA toolkit {toolkit} has no row in `{file}`, so its minimum driver is unknown; add the update with its driver minimum and a `source:` (NVIDIA's release notes, \"CUDA Toolkit and Corresponding Driver Versions\")"
    )]
    ToolkitDriver {
        /// e.g. `13.0.3`.
        toolkit: CudaVersion,
        /// `manifests/rules/cuda-driver.yaml`.
        file: &'static str,
    },
    /// A toolkit release line without an architecture row, e.g. 12.7.
    #[error(
        "CUDA toolkit {toolkit} has no release-line row in `{file}`, so the GPU architectures it supports are unknown; add the line `{line}` with its architectures and a `source:`"
    )]
    ToolkitArches {
        /// e.g. `12.7.1`.
        toolkit: CudaVersion,
        /// e.g. `12.7`.
        line: CudaVersion,
        /// `manifests/rules/cuda-arch.yaml`.
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
        /// `manifests/rules/cuda-arch.yaml`.
        file: &'static str,
    },
    /// A CUDA runtime whose major has no minor-version-compatibility row, e.g. 14.0.
    #[error(
        "the CUDA runtime {runtime} belongs to CUDA {major}, which has no row under `majors:` in `{file}`; add its driver floor with a `source:`"
    )]
    RuntimeMajor {
        /// e.g. `14.0`.
        runtime: CudaVersion,
        /// e.g. `14`.
        major: u32,
        /// `manifests/rules/cuda-runtime.yaml`.
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
                    file: CUDA_DRIVER_FILE,
                });
            }
            if self.arches.support_for(toolkit).is_none() {
                gaps.push(RuleGap::ToolkitArches {
                    toolkit: toolkit.clone(),
                    line: toolkit.release(),
                    file: CUDA_ARCH_FILE,
                });
            }
        }
        if let Some(runtime) = runtime
            && self.runtimes.major(runtime.major()).is_none()
        {
            gaps.push(RuleGap::RuntimeMajor {
                runtime: runtime.clone(),
                major: runtime.major(),
                file: CUDA_RUNTIME_FILE,
            });
        }
        for arch in archs {
            let device = GpuArch::new(arch.major(), arch.minor());
            let hint = if arch.variant().is_some() && self.arches.known(&device).is_some() {
                format!("; {arch} is a compilation target of {device}: name the GPU as {device}")
            } else {
                String::new()
            };
            if arch.variant().is_some() || self.arches.known(arch).is_none() {
                gaps.push(RuleGap::Arch {
                    arch: *arch,
                    hint,
                    file: CUDA_ARCH_FILE,
                });
            }
        }
        gaps
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
