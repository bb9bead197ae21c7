//! Reads which CUDA an installed torch was built for, from the build itself: the
//! `cuda = '13.0'` that torch records in `torch/version.py`, and the CUDA runtime
//! packages its METADATA requires (`nvidia-*-cu12`, `nvidia-*-cu13`,
//! `cuda-toolkit==13.0.2`), with the local label (`+cu130`) only as a last resort. On
//! the real H200 torch is a plain `2.11.0` and still a CUDA 13.0 build. It does not
//! decide whether that build suits a manifest (the rules do).
//!
//! See: <https://github.com/pytorch/pytorch/blob/main/tools/generate_torch_version.py>

use pep440_rs::{Operator, Version};
use pep508_rs::{Requirement, VersionOrUrl};
use serde::{Deserialize, Serialize};

use crate::facts::versions::CudaVersion;

/// What an installed torch was built for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum TorchVariant {
    /// A CUDA build, e.g. for `13.0`.
    Cuda {
        /// The CUDA version, e.g. `13.0`.
        version: CudaVersion,
    },
    /// A ROCm build, e.g. for `6.4.43482`.
    Rocm {
        /// The HIP version torch records, e.g. `6.4.43482`.
        version: String,
    },
    /// A CPU-only build (`torch/version.py` records `cuda = None` and `hip = None`).
    Cpu,
    /// Nothing in the build says.
    Unknown,
}

/// Which evidence decided [`TorchBuild::variant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TorchVariantSource {
    /// `torch/version.py`'s `cuda` / `hip` values.
    VersionPy,
    /// The CUDA runtime packages torch requires.
    Requirements,
    /// The local label, e.g. `+cu130`.
    LocalLabel,
    /// Nothing in the build says.
    NoEvidence,
}

/// An installed torch's build, e.g. CUDA `13.0` with cuDNN `9.19.0.56` required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchBuild {
    /// The CUDA version recorded in `torch/version.py`, e.g. `13.0`.
    pub cuda: Option<CudaVersion>,
    /// What the build is for, decided from the evidence below.
    pub variant: TorchVariant,
    /// Which evidence decided the variant.
    pub variant_source: TorchVariantSource,
    /// `torch.__version__` as recorded in `torch/version.py`, e.g. `2.11.0+cu130`.
    pub reported_version: Option<String>,
    /// The local label of the installed distribution's version, e.g. `cu130`; `None` on
    /// the real H200, whose METADATA says plain `2.11.0`.
    pub local_label: Option<String>,
    /// The CUDA version of the runtime packages torch requires, e.g. `13.0` from
    /// `cuda-toolkit[…]==13.0.2` or `12.8` from `nvidia-cuda-runtime-cu12==12.8.90`.
    pub required_cuda: Option<CudaVersion>,
    /// The CUDA major version named by `-cuNN` requirement suffixes, e.g. `13`.
    pub required_cuda_major: Option<u32>,
    /// The requirements naming CUDA packages, as written, e.g.
    /// `nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"`.
    pub cuda_requirements: Vec<String>,
    /// The cuDNN version torch's wheel pins, e.g. `9.19.0.56`.
    pub required_cudnn: Option<Version>,
}

/// Values of `torch/version.py`, e.g. `__version__ = '2.11.0+cu130'`, `cuda:
/// Optional[str] = '13.0'`, `hip: Optional[str] = None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TorchVersionPy {
    /// `__version__`, e.g. `2.11.0+cu130`.
    pub version: Option<String>,
    /// `cuda`, e.g. `13.0`; `None` for CPU and ROCm builds.
    pub cuda: Option<String>,
    /// `hip`, e.g. `6.4.43482`; `None` for CUDA builds.
    pub hip: Option<String>,
}

/// Reads `torch/version.py` assignments (`name = 'value'`, `name: Optional[str] =
/// 'value'`, `name = None`); other lines are ignored.
pub fn parse_torch_version_py(text: &str) -> TorchVersionPy {
    let mut values = TorchVersionPy::default();
    for line in text.lines() {
        let Some((target, value)) = line.split_once('=') else {
            continue;
        };
        let name = target.split(':').next().unwrap_or_default().trim();
        let value = value.trim();
        let value = value
            .strip_prefix('\'')
            .and_then(|rest| rest.strip_suffix('\''))
            .or_else(|| {
                value
                    .strip_prefix('"')
                    .and_then(|rest| rest.strip_suffix('"'))
            })
            .map(str::to_string);
        match name {
            "__version__" => values.version = value,
            "cuda" => values.cuda = value,
            "hip" => values.hip = value,
            _ => {}
        }
    }
    values
}

/// The `cuNN` suffix of a package name, e.g. `nvidia-cudnn-cu13` → `13`.
fn cuda_suffix_major(name: &str) -> Option<u32> {
    let (_, suffix) = name.rsplit_once("-cu")?;
    suffix.parse().ok()
}

/// The `==` pin of a requirement, e.g. `nvidia-cudnn-cu13==9.19.0.56` → `9.19.0.56`.
fn exact_pin(requirement: &Requirement) -> Option<Version> {
    let Some(VersionOrUrl::VersionSpecifier(specifiers)) = &requirement.version_or_url else {
        return None;
    };
    specifiers
        .iter()
        .find(|specifier| *specifier.operator() == Operator::Equal)
        .map(|specifier| specifier.version().clone())
}

/// The `major.minor` of a version as a CUDA version, e.g. `12.8.90` → `12.8`.
fn cuda_of(version: &Version) -> Option<CudaVersion> {
    match version.release() {
        [major, minor, ..] => format!("{major}.{minor}").parse().ok(),
        _ => None,
    }
}

/// Reads torch's build from `torch/version.py` (if found), its `Requires-Dist` lines
/// and its installed version, e.g. `2.11.0` with `cuda = '13.0'` → CUDA `13.0`.
///
/// The CUDA runtime packages are those of NVIDIA's wheels.
/// See: <https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#pip-wheels>
pub fn torch_build(
    installed_version: Option<&Version>,
    version_py: Option<&str>,
    requires: &[String],
) -> TorchBuild {
    let recorded = version_py.map(parse_torch_version_py);
    let local_label = installed_version
        .filter(|version| version.is_local())
        .and_then(|version| {
            version
                .to_string()
                .split_once('+')
                .map(|(_, label)| label.to_string())
        });

    let mut cuda_requirements = Vec::new();
    let mut required_cuda = None;
    let mut required_cuda_major = None;
    let mut required_cudnn = None;
    for line in requires {
        // Through the guard: the parser panics on some malformed requirements.
        let Ok(requirement) = crate::pep508::parse_requirement(line) else {
            continue;
        };
        let name = requirement.name.to_string();
        let is_cuda_package = name == "cuda-toolkit" || name.starts_with("nvidia-");
        // `nvidia-ml-py` is the NVML binding, not a CUDA runtime package.
        // See: <https://docs.nvidia.com/deploy/nvml-api/>
        if !is_cuda_package || name == "nvidia-ml-py" {
            continue;
        }
        cuda_requirements.push(line.clone());
        let pin = exact_pin(&requirement);
        if let Some(major) = cuda_suffix_major(&name) {
            required_cuda_major.get_or_insert(major);
        }
        if (name == "cuda-toolkit" || name.starts_with("nvidia-cuda-runtime"))
            && let Some(version) = pin.as_ref().and_then(cuda_of)
        {
            required_cuda_major.get_or_insert(version.major());
            required_cuda.get_or_insert(version);
        }
        if name.starts_with("nvidia-cudnn") {
            required_cudnn = required_cudnn.or(pin);
        }
    }

    let cuda = recorded
        .as_ref()
        .and_then(|recorded| recorded.cuda.as_deref())
        .and_then(|cuda| cuda.parse::<CudaVersion>().ok());
    let label_variant = local_label.as_deref().and_then(|label| {
        if let Some(version) = CudaVersion::from_local_label(label) {
            Some(TorchVariant::Cuda { version })
        } else if label == "cpu" {
            Some(TorchVariant::Cpu)
        } else {
            label
                .strip_prefix("rocm")
                .map(|version| TorchVariant::Rocm {
                    version: version.to_string(),
                })
        }
    });
    let (variant, variant_source) = match (&recorded, &cuda, &required_cuda, label_variant) {
        (_, Some(version), _, _) => (
            TorchVariant::Cuda {
                version: version.clone(),
            },
            TorchVariantSource::VersionPy,
        ),
        (Some(TorchVersionPy { hip: Some(hip), .. }), None, _, _) => (
            TorchVariant::Rocm {
                version: hip.clone(),
            },
            TorchVariantSource::VersionPy,
        ),
        (Some(_), None, _, _) => (TorchVariant::Cpu, TorchVariantSource::VersionPy),
        (None, None, Some(version), _) => (
            TorchVariant::Cuda {
                version: version.clone(),
            },
            TorchVariantSource::Requirements,
        ),
        (None, None, None, Some(variant)) => (variant, TorchVariantSource::LocalLabel),
        (None, None, None, None) => (TorchVariant::Unknown, TorchVariantSource::NoEvidence),
    };

    TorchBuild {
        cuda,
        variant,
        variant_source,
        reported_version: recorded.and_then(|recorded| recorded.version),
        local_label,
        required_cuda,
        required_cuda_major,
        cuda_requirements,
        required_cudnn,
    }
}

impl TorchBuild {
    /// The CUDA version the local label names, e.g. `13.0` for `+cu130`; falls back to
    /// the label of `torch.__version__` when the distribution's version has none.
    pub fn label_cuda(&self) -> Option<CudaVersion> {
        let label = self.local_label.clone().or_else(|| {
            self.reported_version
                .as_deref()
                .and_then(|version| version.split_once('+'))
                .map(|(_, label)| label.to_string())
        })?;
        CudaVersion::from_local_label(&label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::capture;

    /// The `Requires-Dist` values of the captured torch METADATA.
    fn h200_requires() -> Vec<String> {
        capture("torch-meta.txt")
            .lines()
            .filter_map(|line| line.strip_prefix("Requires-Dist: "))
            .map(str::to_string)
            .collect()
    }

    /// `torch/version.py` as torch writes it, with the H200's values (`python.txt`:
    /// `torch 2.11.0+cu130 cuda 13.0`).
    const H200_VERSION_PY: &str = "from typing import Optional\n\n\
        __all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']\n\
        __version__ = '2.11.0+cu130'\n\
        debug = False\n\
        cuda: Optional[str] = '13.0'\n\
        hip: Optional[str] = None\n\
        xpu: Optional[str] = None\n";

    #[test]
    fn h200_torch_is_a_cuda_13_0_build_without_label() {
        let version: Version = "2.11.0".parse().unwrap();
        let build = torch_build(Some(&version), Some(H200_VERSION_PY), &h200_requires());
        assert_eq!(build.cuda.as_ref().unwrap().to_string(), "13.0");
        assert_eq!(
            build.variant,
            TorchVariant::Cuda {
                version: "13.0".parse().unwrap()
            }
        );
        assert_eq!(build.variant_source, TorchVariantSource::VersionPy);
        assert_eq!(build.local_label, None);
        assert_eq!(build.reported_version.as_deref(), Some("2.11.0+cu130"));
        assert_eq!(build.required_cuda.as_ref().unwrap().to_string(), "13.0");
        assert_eq!(build.required_cuda_major, Some(13));
        assert_eq!(
            build.required_cudnn.as_ref().unwrap().to_string(),
            "9.19.0.56"
        );
        assert_eq!(build.cuda_requirements.len(), 5);
        assert_eq!(build.label_cuda().unwrap().to_string(), "13.0");
    }

    #[test]
    fn h200_torch_without_version_py_is_read_from_requirements() {
        let version: Version = "2.11.0".parse().unwrap();
        let build = torch_build(Some(&version), None, &h200_requires());
        assert_eq!(
            build.variant,
            TorchVariant::Cuda {
                version: "13.0".parse().unwrap()
            }
        );
        assert_eq!(build.variant_source, TorchVariantSource::Requirements);
    }

    #[test]
    fn cu12_requirements_and_labels() {
        let version: Version = "2.8.0+cu128".parse().unwrap();
        let build = torch_build(
            Some(&version),
            None,
            &[
                "nvidia-cuda-runtime-cu12==12.8.90; platform_system == \"Linux\"".to_string(),
                "nvidia-cudnn-cu12==9.10.2.21; platform_system == \"Linux\"".to_string(),
            ],
        );
        assert_eq!(build.local_label.as_deref(), Some("cu128"));
        assert_eq!(build.required_cuda.as_ref().unwrap().to_string(), "12.8");
        assert_eq!(build.label_cuda().unwrap().to_string(), "12.8");
        let cpu: Version = "2.9.1+cpu".parse().unwrap();
        assert_eq!(
            torch_build(Some(&cpu), None, &[]).variant,
            TorchVariant::Cpu
        );
        assert_eq!(
            torch_build(None, Some("cuda = None\nhip = '6.4.43482'\n"), &[]).variant,
            TorchVariant::Rocm {
                version: "6.4.43482".to_string()
            }
        );
        assert_eq!(
            torch_build(None, Some("cuda = None\nhip = None\n"), &[]).variant,
            TorchVariant::Cpu
        );
        assert_eq!(torch_build(None, None, &[]).variant, TorchVariant::Unknown);
    }
}
