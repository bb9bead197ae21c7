//! Version newtypes of the GPU stack: the kernel driver's version, a CUDA version, a
//! GPU's compute capability and the C library's version. They are distinct types so
//! that a driver version (`580.159.04`) can never be compared with a CUDA version
//! (`13.0`). This module parses and orders them; which driver a CUDA version needs is
//! a rule and lives elsewhere. Driver and CUDA versions are the crate-wide types of
//! `crate::cuda`, re-exported here. It also reads a Python package's name and version
//! (PEP 503, PEP 440), which the interpreter's report and `pip freeze` both hold.

use std::fmt;
use std::hash::Hash;
use std::str::FromStr;

use crate::cuda::serde_via_string;

pub use crate::cuda::{CudaVersion, DriverVersion};

use crate::facts::error::FactsError;

use pep440_rs::Version;
use pep508_rs::PackageName;

/// Parses dot-separated unsigned numbers, e.g. `580.159.04` → `[580, 159, 4]`.
fn numeric_components(value: &str) -> Option<Vec<u32>> {
    value
        .split('.')
        .map(|component| {
            if component.is_empty() || !component.bytes().all(|byte| byte.is_ascii_digit()) {
                None
            } else {
                component.parse::<u32>().ok()
            }
        })
        .collect()
}

/// A GPU's compute capability, e.g. `9.0` for an H200 (its architecture is `sm_90`).
///
/// See: <https://developer.nvidia.com/cuda-gpus>
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeCapability {
    major: u32,
    minor: u32,
}

impl ComputeCapability {
    /// A capability from its two numbers, e.g. `(9, 0)`.
    pub fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The major number, e.g. `9`.
    pub fn major(self) -> u32 {
        self.major
    }

    /// The minor number, e.g. `0`.
    pub fn minor(self) -> u32 {
        self.minor
    }

    /// The architecture name compilers use, e.g. `sm_90` for `9.0` or `sm_120` for `12.0`.
    ///
    /// See: <https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/#gpu-feature-list>
    pub fn sm_name(self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }
}

impl FromStr for ComputeCapability {
    type Err = FactsError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let value = value.trim();
        match numeric_components(value).as_deref() {
            Some([major, minor]) => Ok(Self::new(*major, *minor)),
            _ => Err(FactsError::InvalidComputeCapability {
                value: value.to_string(),
            }),
        }
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

serde_via_string!(ComputeCapability);

/// The GNU C library's version, e.g. `2.39`, read from `glibc 2.39`
/// (`os.confstr('CS_GNU_LIBC_VERSION')`). It bounds the `manylinux_2_N` wheel tags a
/// node accepts.
///
/// See: <https://peps.python.org/pep-0600/>
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GlibcVersion {
    major: u32,
    minor: u32,
}

impl GlibcVersion {
    /// The major number, e.g. `2`.
    pub fn major(self) -> u32 {
        self.major
    }

    /// The minor number, e.g. `39`.
    pub fn minor(self) -> u32 {
        self.minor
    }
}

impl FromStr for GlibcVersion {
    type Err = FactsError;

    /// Reads `2.39` or `glibc 2.39`.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let trimmed = value.trim();
        let number = trimmed.strip_prefix("glibc ").unwrap_or(trimmed);
        match numeric_components(number).as_deref() {
            Some([major, minor]) => Ok(Self {
                major: *major,
                minor: *minor,
            }),
            _ => Err(FactsError::InvalidGlibcVersion {
                value: trimmed.to_string(),
            }),
        }
    }
}

impl fmt::Display for GlibcVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

serde_via_string!(GlibcVersion);

/// Normalizes a name per PEP 503, e.g. `Jinja2` → `jinja2`, `ml_dtypes` → `ml-dtypes`.
///
/// See: <https://packaging.python.org/en/latest/specifications/name-normalization/>
pub fn package_name(value: &str) -> Result<PackageName, FactsError> {
    PackageName::new(value.trim().to_string()).map_err(|source| FactsError::InvalidPackageName {
        value: value.trim().to_string(),
        source,
    })
}

/// Parses a PEP 440 version, e.g. `2.11.0` or `2.9.1+cu130`.
pub fn package_version(value: &str) -> Result<Version, FactsError> {
    Version::from_str(value.trim()).map_err(|source| FactsError::InvalidPackageVersion {
        value: value.trim().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_order_numerically_and_print_as_read() {
        let old: DriverVersion = "580.82.07".parse().unwrap();
        let new: DriverVersion = "580.159.04".parse().unwrap();
        assert!(old < new);
        assert_eq!(new.to_string(), "580.159.04");
        assert_eq!(new.major(), 580);
        assert_eq!(new.components(), &[580, 159, 4]);
        assert!("580".parse::<DriverVersion>().is_err());
        assert!("580.x.1".parse::<DriverVersion>().is_err());
    }

    #[test]
    fn cuda_versions_pad_missing_components() {
        let release: CudaVersion = "13.0".parse().unwrap();
        let patch: CudaVersion = "13.0.1".parse().unwrap();
        assert_eq!(release, "13.0.0".parse::<CudaVersion>().unwrap());
        assert!(release < patch);
        assert!("12.8".parse::<CudaVersion>().unwrap() < release);
        assert_eq!(patch.to_string(), "13.0.1");
        assert_eq!(
            "13.0.88"
                .parse::<CudaVersion>()
                .unwrap()
                .major_minor()
                .to_string(),
            "13.0"
        );
    }

    #[test]
    fn cuda_versions_come_from_local_labels() {
        assert_eq!(
            CudaVersion::from_local_label("cu130").unwrap().to_string(),
            "13.0"
        );
        assert_eq!(
            CudaVersion::from_local_label("cu128").unwrap().to_string(),
            "12.8"
        );
        assert_eq!(
            CudaVersion::from_local_label("cu118").unwrap().to_string(),
            "11.8"
        );
        assert_eq!(CudaVersion::from_local_label("cpu"), None);
        assert_eq!(CudaVersion::from_local_label("rocm6.4"), None);
    }

    #[test]
    fn compute_capabilities_name_their_architecture() {
        let hopper: ComputeCapability = "9.0".parse().unwrap();
        assert_eq!(hopper.sm_name(), "sm_90");
        assert_eq!(
            "12.0".parse::<ComputeCapability>().unwrap().sm_name(),
            "sm_120"
        );
        assert!(hopper < "10.0".parse().unwrap());
        assert!("sm_90".parse::<ComputeCapability>().is_err());
    }

    #[test]
    fn glibc_versions_read_the_confstr_form() {
        let glibc: GlibcVersion = "glibc 2.39".parse().unwrap();
        assert_eq!((glibc.major(), glibc.minor()), (2, 39));
        assert_eq!(glibc.to_string(), "2.39");
        assert!("musl".parse::<GlibcVersion>().is_err());
    }

    #[test]
    fn versions_serialize_as_strings() {
        let driver: DriverVersion = "580.159.04".parse().unwrap();
        assert_eq!(serde_json::to_string(&driver).unwrap(), "\"580.159.04\"");
        let back: DriverVersion = serde_json::from_str("\"580.159.04\"").unwrap();
        assert_eq!(back.to_string(), "580.159.04");
    }
}
