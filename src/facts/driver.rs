//! Parser for the kernel driver's version file (`/proc/driver/nvidia/version`,
//! `/sys/module/nvidia/version`, or a file named by `--driver-version-file`). It does
//! not decide which CUDA versions a driver supports: that is a rule.
//!
//! See: <https://download.nvidia.com/XFree86/Linux-x86_64/580.82.07/README/procinterface.html>

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;
use crate::facts::versions::DriverVersion;

/// Which kernel module the driver is, read from its `NVRM version` line.
///
/// See: <https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/>
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelModule {
    /// `NVIDIA UNIX Open Kernel Module for x86_64`.
    Open,
    /// `NVIDIA UNIX x86_64 Kernel Module`.
    Proprietary,
}

/// Where the driver version was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum DriverVersionSource {
    /// A version file, e.g. `/proc/driver/nvidia/version`.
    File {
        /// The file, e.g. `/proc/driver/nvidia/version`.
        path: PathBuf,
    },
    /// The `driver_version` column of `nvidia-smi --query-gpu`.
    NvidiaSmi,
}

/// The loaded NVIDIA kernel driver, e.g. `580.159.04`, open kernel module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverFacts {
    /// The driver's version, e.g. `580.159.04`.
    pub version: DriverVersion,
    /// Open or proprietary module, when the file says, e.g. `open`.
    pub kernel_module: Option<KernelModule>,
    /// Where the version was read.
    pub source: DriverVersionSource,
}

/// Reads a driver version file: either the `NVRM version: … 580.159.04 …` form of
/// `/proc/driver/nvidia/version` or a bare `580.159.04` (as in
/// `/sys/module/nvidia/version`). Returns the version and the module kind if named.
pub fn parse_driver_version_file(
    text: &str,
) -> Result<(DriverVersion, Option<KernelModule>), FactsError> {
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("NVRM version:") {
            let kernel_module = if rest.contains("Open Kernel Module") {
                Some(KernelModule::Open)
            } else if rest.contains("Kernel Module") {
                Some(KernelModule::Proprietary)
            } else {
                None
            };
            let version = rest
                .split_whitespace()
                .find_map(|word| word.parse::<DriverVersion>().ok())
                .ok_or_else(|| FactsError::InvalidLine {
                    line: index + 1,
                    text: line.to_string(),
                })?;
            return Ok((version, kernel_module));
        }
        if !trimmed.starts_with("GCC version:") {
            let version = trimmed
                .parse::<DriverVersion>()
                .map_err(|error| FactsError::from(error).on_line(index + 1, line))?;
            return Ok((version, None));
        }
    }
    Err(FactsError::InvalidLine {
        line: 1,
        text: text.lines().next().unwrap_or_default().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::capture;

    #[test]
    fn h200_proc_version_is_580_159_04_open() {
        let (version, module) =
            parse_driver_version_file(&capture("proc-driver-nvidia-version.txt")).unwrap();
        assert_eq!(version.to_string(), "580.159.04");
        assert_eq!(module, Some(KernelModule::Open));
    }

    #[test]
    fn h200_sys_module_version_is_bare() {
        let (version, module) =
            parse_driver_version_file(&capture("sys-module-nvidia-version.txt")).unwrap();
        assert_eq!(version, "580.159.4".parse().unwrap());
        assert_eq!(module, None);
    }

    #[test]
    fn proprietary_module_and_garbage() {
        let (version, module) = parse_driver_version_file(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n",
        )
        .unwrap();
        assert_eq!(version.to_string(), "535.104.05");
        assert_eq!(module, Some(KernelModule::Proprietary));
        assert!(parse_driver_version_file("hello\n").is_err());
        assert!(parse_driver_version_file("").is_err());
    }
}
