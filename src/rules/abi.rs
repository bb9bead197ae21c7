//! Native ABI facts no package metadata carries, from `manifests/rules/abi-pins.yaml`:
//! a native extension built against one release of another package
//! (sgl-kernel 0.3.21 → torch 2.9.1), and packages whose version must equal another's
//! (flashinfer-cubin = flashinfer-python).

use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{PackageName, Requirement};
use serde::Deserialize;

use super::error::RulesError;
use super::file::{At, Parsed, layer};
use super::runtime::specifiers_text;

/// The rule file, as embedded in the binary.
pub const ABI_PINS_FILE: &str = "manifests/rules/abi-pins.yaml";
pub(super) const ABI_PINS_YAML: &str = include_str!("../../manifests/rules/abi-pins.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AbiFile {
    schema: u32,
    #[serde(default)]
    abi_pins: Vec<AbiPinEntry>,
    #[serde(default)]
    version_locks: Vec<VersionLock>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AbiPinEntry {
    package: PackageName,
    #[serde(with = "specifiers_text")]
    versions: VersionSpecifiers,
    requires: String,
    reason: String,
    source: String,
}

/// A native ABI pin, e.g. sgl-kernel `==0.3.21` (any build) requires `torch==2.9.1`.
#[derive(Debug, Clone, PartialEq)]
pub struct AbiPin {
    /// e.g. `sgl-kernel`.
    pub package: PackageName,
    /// The releases it applies to, e.g. `==0.3.21` (local builds included).
    pub versions: VersionSpecifiers,
    /// What they need, e.g. `torch==2.9.1`.
    pub requires: Requirement,
    /// The ABI fact, e.g. the changed `c10_cuda_check_implementation` symbol.
    pub reason: String,
    /// Where it is documented.
    pub source: String,
}

/// A package whose version must equal another's, e.g. flashinfer-cubin follows
/// flashinfer-python.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct VersionLock {
    /// e.g. `flashinfer-cubin`.
    pub package: PackageName,
    /// e.g. `flashinfer-python`.
    pub follows: PackageName,
    /// Why, e.g. `flashinfer-python loads the cubins of exactly its own version`.
    pub reason: String,
    /// Where it is documented.
    pub source: String,
}

/// The ABI rules.
#[derive(Debug, Clone)]
pub struct AbiRules {
    pins: Vec<AbiPin>,
    locks: Vec<VersionLock>,
}

/// The rows of one or more ABI files, each with where it was written.
#[derive(Debug)]
pub(super) struct AbiLayer {
    pins: Vec<(AbiPin, At)>,
    locks: Vec<(VersionLock, At)>,
}

impl AbiLayer {
    /// Parse one file, with the checks of a file on its own.
    pub(super) fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        let mut parsed: Parsed<AbiFile> = super::file::parse(text, file)?;
        let entries = std::mem::take(&mut parsed.value.abi_pins);
        let locks = std::mem::take(&mut parsed.value.version_locks);
        let mut pins = Vec::new();
        for (entry, at) in parsed.rows("abi_pins", entries) {
            let requires = Requirement::from_str(&entry.requires).map_err(|error| {
                at.invalid(format!(
                    "`{}` is not a requirement: {error}",
                    entry.requires
                ))
            })?;
            pins.push((
                AbiPin {
                    package: entry.package,
                    versions: entry.versions,
                    requires,
                    reason: entry
                        .reason
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    source: entry.source,
                },
                at,
            ));
        }
        Ok(Self {
            pins,
            locks: parsed.rows("version_locks", locks),
        })
    }

    /// Lay a user's rows over these: the pin of the same package and versions, or the
    /// lock of the same package, is replaced.
    pub(super) fn layer(&mut self, over: Self) {
        layer(
            &mut self.pins,
            over.pins,
            |pin| (pin.package.clone(), pin.versions.to_string()),
            false,
        );
        layer(
            &mut self.locks,
            over.locks,
            |lock| lock.package.clone(),
            false,
        );
    }

    /// The rules.
    pub(super) fn build(self) -> AbiRules {
        AbiRules {
            pins: self.pins.into_iter().map(|(pin, _)| pin).collect(),
            locks: self.locks.into_iter().map(|(lock, _)| lock).collect(),
        }
    }
}

impl AbiRules {
    /// The rules shipped in the binary, from the one parse of them ([`super::RuleSet::embedded`]).
    pub fn embedded() -> Result<Self, RulesError> {
        Ok(super::RuleSet::embedded()?.abi)
    }

    /// No rules.
    pub fn empty() -> Self {
        Self {
            pins: Vec::new(),
            locks: Vec::new(),
        }
    }

    /// Parse a rule file's text.
    pub fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        Ok(AbiLayer::parse(text, file)?.build())
    }

    /// The ABI pins that apply to `name version`, e.g. sgl-kernel `0.3.21+cu130`.
    pub fn pins_for<'a>(
        &'a self,
        name: &'a PackageName,
        version: &'a Version,
    ) -> impl Iterator<Item = &'a AbiPin> + 'a {
        let public = version.clone().without_local();
        self.pins
            .iter()
            .filter(move |pin| pin.package == *name && pin.versions.contains(&public))
    }

    /// The version lock of `name`, if it follows another package.
    pub fn lock_for(&self, name: &PackageName) -> Option<&VersionLock> {
        self.locks.iter().find(|lock| lock.package == *name)
    }
}

impl super::file::RuleFile for AbiFile {
    fn schema(&self) -> u32 {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sgl_kernel_any_build_needs_torch_2_9_1() {
        let rules = AbiRules::embedded().unwrap();
        let name = PackageName::from_str("sgl-kernel").unwrap();
        let version = Version::from_str("0.3.21+cu130").unwrap();
        let pins: Vec<_> = rules.pins_for(&name, &version).collect();
        assert_eq!(pins.len(), 1);
        assert_eq!(pins[0].requires.to_string(), "torch==2.9.1");
        assert!(pins[0].reason.contains("EiPKcS2_jb"));
        let cubin = PackageName::from_str("flashinfer-cubin").unwrap();
        assert_eq!(
            rules.lock_for(&cubin).unwrap().follows.to_string(),
            "flashinfer-python"
        );
    }
}
