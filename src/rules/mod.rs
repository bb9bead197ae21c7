//! Rules: knowledge no package metadata carries, loaded from `manifests/rules/`.
//!
//! Every fact is data with a `source:`: CUDA toolkit → minimum driver
//! (`cuda-driver.yaml`), toolkit → GPU architectures (`cuda-arch.yaml`), local labels
//! and wheel families → CUDA major, and each major's driver floor (`cuda-runtime.yaml`), native ABI pins and version
//! locks (`abi-pins.yaml`), toolkit update → nvcc build and NVIDIA's apt naming
//! (`cuda-updates.yaml`). This module parses and looks them up, and does not decide
//! anything on its own (the resolver and the diff apply the rules).

mod abi;
mod arch;
mod coverage;
mod driver;
mod error;
mod file;
mod runtime;
mod updates;

pub use abi::{ABI_PINS_FILE, AbiPin, AbiRules, VersionLock};
pub use arch::{ArchSupport, ArchTable, CUDA_ARCH_FILE, KnownArch, RenamedArch};
pub use coverage::RuleGap;
pub use driver::{CUDA_DRIVER_FILE, DriverMinimum, DriverRequirement, DriverTable};
pub use error::RulesError;
pub use runtime::{
    CUDA_RUNTIME_FILE, FamilyRule, IndependentPackage, LocalLabelPolicy, MajorRule, RuntimeGap,
    RuntimeKind, RuntimeRule, RuntimeRules,
};
pub use updates::{AptNaming, CUDA_UPDATES_FILE, NvccMatch, UpdateRow, UpdateTable};

/// Every rule table, as the resolver applies them.
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// Toolkit → minimum driver.
    pub drivers: DriverTable,
    /// Toolkit → GPU architectures.
    pub arches: ArchTable,
    /// Wheel → CUDA runtime.
    pub runtimes: RuntimeRules,
    /// Native ABI pins and version locks.
    pub abi: AbiRules,
}

impl RuleSet {
    /// The rules shipped in the binary.
    pub fn embedded() -> Result<Self, RulesError> {
        Ok(Self {
            drivers: DriverTable::embedded()?,
            arches: ArchTable::embedded()?,
            runtimes: RuntimeRules::embedded()?,
            abi: AbiRules::embedded()?,
        })
    }

    /// The embedded rules with each table that `dir` holds a file for (`cuda-driver.yaml`,
    /// `cuda-arch.yaml`, `cuda-runtime.yaml`, `abi-pins.yaml`) replaced by that file
    /// (`--rules DIR`); a directory that cannot be read, or holds none of them, is an
    /// error naming it.
    pub fn with_dir(dir: &std::path::Path) -> Result<Self, RulesError> {
        let mut rules = Self::embedded()?;
        let unusable = |message: String| RulesError::Invalid {
            file: dir.display().to_string(),
            message,
        };
        if !dir.is_dir() {
            return Err(unusable("it is not a directory".to_string()));
        }
        let mut found = 0;
        for name in [
            "cuda-driver.yaml",
            "cuda-arch.yaml",
            "cuda-runtime.yaml",
            "abi-pins.yaml",
        ] {
            let path = dir.join(name);
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(unusable(format!("`{name}`: {error}"))),
            };
            let file = path.display().to_string();
            match name {
                "cuda-driver.yaml" => rules.drivers = DriverTable::parse(&text, &file)?,
                "cuda-arch.yaml" => rules.arches = ArchTable::parse(&text, &file)?,
                "cuda-runtime.yaml" => rules.runtimes = RuntimeRules::parse(&text, &file)?,
                _ => rules.abi = AbiRules::parse(&text, &file)?,
            }
            found += 1;
        }
        if found == 0 {
            return Err(unusable(
                "it holds none of cuda-driver.yaml, cuda-arch.yaml, cuda-runtime.yaml, abi-pins.yaml".to_string(),
            ));
        }
        Ok(rules)
    }
}

/// The SHA-256 of the rule files shipped in the binary, in hex, e.g. `3f1c…`: each
/// file's name and bytes in a fixed order, so `upgrade --version` names the rules every
/// result depends on.
pub fn embedded_digest() -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (name, text) in [
        ("abi-pins.yaml", abi::ABI_PINS_YAML),
        ("cuda-arch.yaml", arch::CUDA_ARCH_YAML),
        ("cuda-driver.yaml", driver::CUDA_DRIVER_YAML),
        ("cuda-runtime.yaml", runtime::CUDA_RUNTIME_YAML),
        ("cuda-updates.yaml", updates::CUDA_UPDATES_YAML),
    ] {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    hex::encode(hasher.finalize())
}
