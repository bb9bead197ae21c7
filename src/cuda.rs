//! CUDA-domain value types: toolkit versions, driver versions and GPU architectures.
//!
//! A CUDA toolkit version (`13.0.1`) and a Linux driver version (`580.82.07`) are
//! different types on purpose: comparing one with the other is the classic mistake of
//! this domain (a "driver 13.0" does not exist; `nvidia-smi` prints the highest CUDA
//! version the driver supports next to the driver's own version).
//! See: https://docs.nvidia.com/deploy/cuda-compatibility/
//!
//! This module owns parsing and ordering only; which driver a toolkit needs is data
//! in `manifests/rules/` (the `rules` module).

use std::fmt;
use std::str::FromStr;

/// Failed to parse a CUDA-domain value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaValueError {
    /// e.g. `13` or `13.x` given for a toolkit version.
    #[error(
        "`{value}` is not a CUDA version (expected `MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, e.g. `13.0.1`)"
    )]
    CudaVersion { value: String },
    /// e.g. `580` given for a driver version.
    #[error("`{value}` is not a driver version (expected `MAJOR.MINOR[.PATCH]`, e.g. `580.82.07`)")]
    DriverVersion { value: String },
    /// e.g. `sm90` or `compute_90`.
    #[error(
        "`{value}` is not a GPU architecture (expected `sm_MAJORMINOR` with an optional `a` or `f`, e.g. `sm_90` or `sm_90a`)"
    )]
    GpuArch { value: String },
    /// e.g. `same` given for `target.cuda_wheels`.
    #[error(
        "`{value}` is not a CUDA wheel policy (expected `any`, `one-major`, `toolkit` or a CUDA major such as `13`)"
    )]
    WheelPolicy { value: String },
}

/// Which CUDA majors the wheels of one environment may carry (`target.cuda_wheels`).
///
/// The wheels' runtimes come with the wheels and need only the driver; the system
/// toolkit decides nothing about them unless this policy says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CudaWheelPolicy {
    /// Any major the driver serves; several majors in one environment are a warning
    /// (`any`, the default, as pip and uv install).
    #[default]
    Any,
    /// Every CUDA wheel of one major, the resolver's choice (`one-major`).
    OneMajor,
    /// Every CUDA wheel of the system toolkit's major (`toolkit`): what compiles or JITs
    /// against the toolkit at run time matches the wheels.
    Toolkit,
    /// Every CUDA wheel of this major, e.g. `13`.
    Major(u32),
}

impl FromStr for CudaWheelPolicy {
    type Err = CudaValueError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "any" => Ok(Self::Any),
            "one-major" => Ok(Self::OneMajor),
            "toolkit" => Ok(Self::Toolkit),
            major
                if !major.is_empty()
                    && major.len() <= 3
                    && major.bytes().all(|b| b.is_ascii_digit()) =>
            {
                major
                    .parse()
                    .map(Self::Major)
                    .map_err(|_| CudaValueError::WheelPolicy {
                        value: value.to_string(),
                    })
            }
            _ => Err(CudaValueError::WheelPolicy {
                value: value.to_string(),
            }),
        }
    }
}

impl fmt::Display for CudaWheelPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("any"),
            Self::OneMajor => f.write_str("one-major"),
            Self::Toolkit => f.write_str("toolkit"),
            Self::Major(major) => write!(f, "{major}"),
        }
    }
}

fn parse_dotted(value: &str, min: usize, max: usize) -> Option<Vec<u32>> {
    let parts: Vec<&str> = value.split('.').collect();
    if parts.len() < min || parts.len() > max {
        return None;
    }
    parts
        .iter()
        .map(|part| {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                part.parse::<u32>().ok()
            }
        })
        .collect()
}

/// A CUDA toolkit or runtime version, e.g. `13.0.1` or `12.8`.
///
/// A missing patch component compares as `0`, so `13.0` == `13.0.0`; the original
/// spelling is kept for display.
#[derive(Debug, Clone)]
pub struct CudaVersion {
    major: u32,
    minor: u32,
    patch: Option<u32>,
}

impl CudaVersion {
    /// `CudaVersion::new(13, 0, Some(1))` is `13.0.1`.
    pub fn new(major: u32, minor: u32, patch: Option<u32>) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// The major version, e.g. `13`.
    pub fn major(&self) -> u32 {
        self.major
    }

    /// The minor version, e.g. `0`.
    pub fn minor(&self) -> u32 {
        self.minor
    }

    /// The patch version when spelled, e.g. `Some(1)` for `13.0.1`.
    pub fn patch(&self) -> Option<u32> {
        self.patch
    }

    /// The `MAJOR.MINOR` release line, e.g. `13.0` for `13.0.1`.
    pub fn release(&self) -> CudaVersion {
        CudaVersion::new(self.major, self.minor, None)
    }

    /// Read a PyTorch-style local label, e.g. `cu130` → `13.0`, `cu128` → `12.8`
    /// (the last digit is the minor version).
    /// See: https://pytorch.org/get-started/previous-versions/
    pub fn from_local_label(label: &str) -> Option<CudaVersion> {
        let digits = label.strip_prefix("cu")?;
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(CudaVersion::new(
            major.parse().ok()?,
            minor.parse().ok()?,
            None,
        ))
    }

    /// The same version cut to `MAJOR.MINOR`, e.g. `13.0` for `13.0.88`.
    pub fn major_minor(&self) -> CudaVersion {
        self.release()
    }

    /// The wheel local label of this release, e.g. `cu130` for `13.0.1`.
    pub fn local_label(&self) -> String {
        format!("cu{}{}", self.major, self.minor)
    }

    fn key(&self) -> (u32, u32, u32) {
        (self.major, self.minor, self.patch.unwrap_or(0))
    }
}

impl PartialEq for CudaVersion {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for CudaVersion {}
impl PartialOrd for CudaVersion {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for CudaVersion {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}
impl std::hash::Hash for CudaVersion {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl FromStr for CudaVersion {
    type Err = CudaValueError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let parts =
            parse_dotted(value.trim(), 2, 3).ok_or_else(|| CudaValueError::CudaVersion {
                value: value.to_string(),
            })?;
        Ok(Self::new(parts[0], parts[1], parts.get(2).copied()))
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.patch {
            Some(patch) => write!(f, "{}.{}.{}", self.major, self.minor, patch),
            None => write!(f, "{}.{}", self.major, self.minor),
        }
    }
}

/// A Linux NVIDIA driver version, e.g. `580.82.07`: ordered numerically
/// (`580.82.07` < `580.159.04`; `580.159.04` == `580.159.4`), printed as it was read.
#[derive(Debug, Clone)]
pub struct DriverVersion {
    major: u32,
    minor: u32,
    patch: Option<u32>,
    spelling: String,
}

impl DriverVersion {
    fn key(&self) -> (u32, u32, u32) {
        (self.major, self.minor, self.patch.unwrap_or(0))
    }

    /// The numeric components, e.g. `[580, 82, 7]`.
    pub fn components(&self) -> Vec<u32> {
        let mut components = vec![self.major, self.minor];
        components.extend(self.patch);
        components
    }

    /// The branch, e.g. `580` for `580.82.07`.
    pub fn major(&self) -> u32 {
        self.major
    }
}

impl PartialEq for DriverVersion {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for DriverVersion {}
impl PartialOrd for DriverVersion {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for DriverVersion {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}
impl std::hash::Hash for DriverVersion {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl FromStr for DriverVersion {
    type Err = CudaValueError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let trimmed = value.trim();
        let parts = parse_dotted(trimmed, 2, 3).ok_or_else(|| CudaValueError::DriverVersion {
            value: value.to_string(),
        })?;
        Ok(Self {
            major: parts[0],
            minor: parts[1],
            patch: parts.get(2).copied(),
            spelling: trimmed.to_string(),
        })
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelling)
    }
}

/// A GPU architecture as the compilers name it, e.g. `sm_90` (compute capability 9.0), or
/// a compilation target of one: `sm_90a` (architecture-specific), `sm_100f` (family-specific).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GpuArch {
    major: u32,
    minor: u32,
    /// `None`, `Some('a')` or `Some('f')`.
    variant: Option<char>,
}

impl GpuArch {
    /// `GpuArch::new(12, 0)` is `sm_120`.
    pub fn new(major: u32, minor: u32) -> Self {
        Self {
            major,
            minor,
            variant: None,
        }
    }

    /// The `a` or `f` of `sm_90a` or `sm_100f`; `None` for a device's own name.
    pub fn variant(&self) -> Option<char> {
        self.variant
    }

    /// Parse a compute capability as `nvidia-smi --query-gpu=compute_cap` prints it, e.g. `9.0`.
    pub fn from_compute_capability(value: &str) -> Result<Self, CudaValueError> {
        let parts = parse_dotted(value.trim(), 2, 2).ok_or_else(|| CudaValueError::GpuArch {
            value: value.to_string(),
        })?;
        Ok(Self::new(parts[0], parts[1]))
    }

    /// The compute capability major, e.g. `9` for `sm_90`.
    pub fn major(&self) -> u32 {
        self.major
    }

    /// The compute capability minor, e.g. `0` for `sm_90`.
    pub fn minor(&self) -> u32 {
        self.minor
    }

    /// The compute capability, e.g. `9.0`.
    pub fn compute_capability(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }
}

impl FromStr for GpuArch {
    type Err = CudaValueError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let error = || CudaValueError::GpuArch {
            value: value.to_string(),
        };
        let name = value.trim().strip_prefix("sm_").ok_or_else(error)?;
        // A trailing `a` or `f` names a compilation target: sm_90a, sm_100f.
        let (digits, variant) = match name.strip_suffix(['a', 'f']) {
            Some(digits) => (digits, name.chars().last()),
            None => (name, None),
        };
        // The last digit is the minor version: sm_90 → 9.0, sm_120 → 12.0.
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(error());
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Ok(Self {
            major: major.parse().map_err(|_| error())?,
            minor: minor.parse().map_err(|_| error())?,
            variant,
        })
    }
}

impl fmt::Display for GpuArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)?;
        match self.variant {
            Some(variant) => write!(f, "{variant}"),
            None => Ok(()),
        }
    }
}

/// `Serialize` and `Deserialize` through `Display` and `FromStr`, for value types that
/// are strings in JSON (`"13.0.1"`).
macro_rules! serde_via_string {
    ($($ty:ty),*) => {$(
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                text.parse().map_err(::serde::de::Error::custom)
            }
        }
    )*};
}
pub(crate) use serde_via_string;

serde_via_string!(CudaVersion, DriverVersion, GpuArch);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_policies_parse_and_print() {
        for text in ["any", "one-major", "toolkit", "13"] {
            let policy: CudaWheelPolicy = text.parse().unwrap();
            assert_eq!(policy.to_string(), text);
        }
        assert_eq!(
            "12".parse::<CudaWheelPolicy>(),
            Ok(CudaWheelPolicy::Major(12))
        );
        for bad in ["", "same", "cu13", "13.0", "99999"] {
            assert!(bad.parse::<CudaWheelPolicy>().is_err(), "{bad}");
        }
    }

    #[test]
    fn cuda_versions_order_with_missing_patch_as_zero() {
        let ga: CudaVersion = "13.0".parse().unwrap();
        let update: CudaVersion = "13.0.1".parse().unwrap();
        assert!(ga < update);
        assert_eq!(ga, "13.0.0".parse::<CudaVersion>().unwrap());
        assert_eq!(update.to_string(), "13.0.1");
        assert_eq!(update.local_label(), "cu130");
        assert!("13".parse::<CudaVersion>().is_err());
        assert!("13.x".parse::<CudaVersion>().is_err());
    }

    #[test]
    fn driver_versions_keep_their_spelling() {
        let driver: DriverVersion = "580.82.07".parse().unwrap();
        assert_eq!(driver.to_string(), "580.82.07");
        assert!(driver < "580.159.04".parse().unwrap());
        assert!(driver > "570.124.06".parse().unwrap());
    }

    #[test]
    fn gpu_arch_round_trips() {
        let hopper: GpuArch = "sm_90".parse().unwrap();
        assert_eq!(hopper, GpuArch::from_compute_capability("9.0").unwrap());
        let blackwell: GpuArch = "sm_120".parse().unwrap();
        assert_eq!(blackwell.compute_capability(), "12.0");
        assert!("sm90".parse::<GpuArch>().is_err());
        let specific: GpuArch = "sm_90a".parse().unwrap();
        assert_eq!(specific.to_string(), "sm_90a");
        assert_eq!(specific.variant(), Some('a'));
        assert_ne!(specific, hopper);
        assert_eq!("sm_100f".parse::<GpuArch>().unwrap().to_string(), "sm_100f");
        assert!("sm_90b".parse::<GpuArch>().is_err());
        assert!("sm_a".parse::<GpuArch>().is_err());
    }
}
