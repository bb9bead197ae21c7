//! Which CUDA runtime a wheel was built for, from `manifests/rules/cuda-runtime.yaml`:
//! local labels (`+cu130` → 13.0) and CUDA-suffixed wheel families
//! (`nvidia-*-cu12` → CUDA 12).

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::PackageName;
use serde::Deserialize;

use super::error::RulesError;

/// The rule file, as embedded in the binary.
pub const CUDA_RUNTIME_FILE: &str = "manifests/rules/cuda-runtime.yaml";
const CUDA_RUNTIME_YAML: &str = include_str!("../../manifests/rules/cuda-runtime.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeFile {
    schema: u32,
    local_labels: Vec<LocalLabelRule>,
    families: Vec<FamilyRuleEntry>,
}

/// A local label and the runtime it names, e.g. `cu130` → `==13.0.*`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LocalLabelRule {
    /// e.g. `cu130`.
    pub label: String,
    /// A specifier on the stack's CUDA runtime, e.g. `==13.0.*`.
    #[serde(with = "specifiers_text")]
    pub runtime: VersionSpecifiers,
    /// Where it is documented.
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FamilyRuleEntry {
    packages: String,
    #[serde(default, with = "optional_specifiers_text")]
    versions: Option<VersionSpecifiers>,
    #[serde(with = "specifiers_text")]
    runtime: VersionSpecifiers,
    source: String,
}

/// A wheel family and the runtime it needs, e.g. `nvidia-*-cu12` → `==12.*`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FamilyRule {
    /// A name pattern with at most one `*`, e.g. `nvidia-*-cu12`.
    pub packages: String,
    /// Only these versions of the family, e.g. `>=13,<14`; `None` for all.
    #[serde(serialize_with = "serialize_optional_display")]
    pub versions: Option<VersionSpecifiers>,
    /// A specifier on the stack's CUDA runtime, e.g. `==12.*`.
    #[serde(serialize_with = "serialize_display")]
    pub runtime: VersionSpecifiers,
    /// Where it is documented.
    pub source: String,
}

/// Why a release needs a CUDA runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeRule<'a> {
    /// Its local label, e.g. `+cu130`.
    LocalLabel(&'a LocalLabelRule),
    /// Its project name, e.g. `nvidia-cublas-cu12`.
    Family(&'a FamilyRule),
}

impl RuntimeRule<'_> {
    /// The specifier on the CUDA runtime, e.g. `==13.0.*`.
    pub fn runtime(&self) -> &VersionSpecifiers {
        match self {
            Self::LocalLabel(rule) => &rule.runtime,
            Self::Family(rule) => &rule.runtime,
        }
    }

    /// Where the rule is documented.
    pub fn source(&self) -> &str {
        match self {
            Self::LocalLabel(rule) => &rule.source,
            Self::Family(rule) => &rule.source,
        }
    }
}

/// The runtime rules.
#[derive(Debug, Clone)]
pub struct RuntimeRules {
    labels: Vec<LocalLabelRule>,
    families: Vec<FamilyRule>,
}

impl RuntimeRules {
    /// The rules shipped in the binary.
    pub fn embedded() -> Result<Self, RulesError> {
        Self::parse(CUDA_RUNTIME_YAML, CUDA_RUNTIME_FILE)
    }

    /// No rules (for resolving scenarios that know nothing of CUDA).
    pub fn empty() -> Self {
        Self {
            labels: Vec::new(),
            families: Vec::new(),
        }
    }

    /// Parse a rule file's text.
    pub fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        let parsed: RuntimeFile = super::file::parse(text, file)?;
        for family in &parsed.families {
            if family.packages.matches('*').count() > 1 {
                return Err(RulesError::Invalid {
                    file: file.to_string(),
                    message: format!("pattern `{}` has more than one `*`", family.packages),
                });
            }
        }
        Ok(Self {
            labels: parsed.local_labels,
            families: parsed
                .families
                .into_iter()
                .map(|entry| FamilyRule {
                    packages: entry.packages,
                    versions: entry.versions,
                    runtime: entry.runtime,
                    source: entry.source,
                })
                .collect(),
        })
    }

    /// The rules that say which runtime `name version` needs, e.g. `torch
    /// 2.9.1+cu130` → the `cu130` label rule.
    pub fn rules_for(&self, name: &PackageName, version: &Version) -> Vec<RuntimeRule<'_>> {
        let mut found = Vec::new();
        if let [pep440_rs::LocalSegment::String(label), ..] = version.local() {
            found.extend(
                self.labels
                    .iter()
                    .filter(|rule| rule.label == *label)
                    .map(RuntimeRule::LocalLabel),
            );
        }
        found.extend(
            self.families
                .iter()
                .filter(|rule| {
                    glob_matches(&rule.packages, name.as_ref())
                        && rule
                            .versions
                            .as_ref()
                            .is_none_or(|versions| versions.contains(version))
                })
                .map(RuntimeRule::Family),
        );
        found
    }
}

/// `nvidia-*-cu12` matches `nvidia-cublas-cu12`; a pattern without `*` matches itself.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((prefix, suffix)) => {
            name.len() >= prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
        }
        None => pattern == name,
    }
}

fn serialize_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

fn serialize_optional_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &Option<T>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => serializer.collect_str(value),
        None => serializer.serialize_none(),
    }
}

pub(crate) mod specifiers_text {
    //! Specifiers as their text in rule files, e.g. `"==13.0.*"`.
    use std::str::FromStr;

    use pep440_rs::VersionSpecifiers;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<VersionSpecifiers, D::Error> {
        let text = String::deserialize(deserializer)?;
        VersionSpecifiers::from_str(&text).map_err(serde::de::Error::custom)
    }

    pub fn serialize<S: Serializer>(
        value: &VersionSpecifiers,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }
}

mod optional_specifiers_text {
    //! Optional specifiers as their text in rule files.
    use std::str::FromStr;

    use pep440_rs::VersionSpecifiers;
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<VersionSpecifiers>, D::Error> {
        let text = Option::<String>::deserialize(deserializer)?;
        text.map(|text| VersionSpecifiers::from_str(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

impl super::file::RuleFile for RuntimeFile {
    fn schema(&self) -> u32 {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn rules_for(name: &str, version: &str) -> Vec<String> {
        let rules = RuntimeRules::embedded().unwrap();
        rules
            .rules_for(
                &PackageName::from_str(name).unwrap(),
                &Version::from_str(version).unwrap(),
            )
            .iter()
            .map(|rule| rule.runtime().to_string())
            .collect()
    }

    #[test]
    fn labels_and_families() {
        assert_eq!(rules_for("torch", "2.9.1+cu130"), ["==13.0.*"]);
        assert_eq!(rules_for("torch", "2.9.1+cu128"), ["==12.8.*"]);
        assert!(rules_for("torch", "2.9.1").is_empty());
        assert_eq!(rules_for("nvidia-cublas-cu12", "12.8.4.1"), ["==12.*"]);
        assert_eq!(rules_for("nvidia-nccl-cu13", "2.27.7"), ["==13.*"]);
        assert_eq!(rules_for("cuda-toolkit", "13.0.2"), ["==13.*"]);
        assert!(rules_for("nvidia-ml-py", "13.615.71").is_empty());
    }
}
