//! Which CUDA runtime a wheel carries, from `manifests/rules/cuda-runtime.yaml`: local labels
//! (`+cu130` → CUDA 13), CUDA-suffixed wheel families (`nvidia-*-cu12` → CUDA 12), the
//! suffix-less CUDA 13 library wheels by version range (`nvidia-cufft 12.x` → CUDA 13), and
//! per CUDA major the driver floor of NVIDIA's minor version compatibility.

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::PackageName;
use serde::Deserialize;

use super::error::RulesError;
use super::file::{At, Parsed, duplicate, layer};
use crate::cuda::DriverVersion;

/// The rule file, as embedded in the binary.
pub const CUDA_RUNTIME_FILE: &str = "manifests/rules/cuda-runtime.yaml";
pub(super) const CUDA_RUNTIME_YAML: &str = include_str!("../../manifests/rules/cuda-runtime.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeFile {
    schema: u32,
    #[serde(default)]
    majors: Vec<MajorRule>,
    #[serde(default)]
    local_labels: Option<LocalLabelPolicy>,
    #[serde(default)]
    families: Vec<FamilyRuleEntry>,
    #[serde(default)]
    cuda_independent: Vec<IndependentPackage>,
}

/// A CUDA major and the driver floor of its minor version compatibility, e.g. 13 → R580.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MajorRule {
    /// e.g. `13`.
    pub major: u32,
    /// e.g. `580.65.06`.
    pub driver: DriverVersion,
    /// What still fails on such a driver, as NVIDIA documents it.
    pub limits: String,
    /// Where it is documented.
    pub source: String,
}

/// How every `+cuXYZ` label is read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LocalLabelPolicy {
    /// Where the label convention is documented.
    pub source: String,
    /// Where the same-major toolkit requirement of JIT paths is documented.
    pub jit_source: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FamilyRuleEntry {
    packages: String,
    #[serde(default, with = "optional_specifiers_text")]
    versions: Option<VersionSpecifiers>,
    major: u32,
    source: String,
}

/// A project that carries no CUDA runtime although its name starts with `nvidia-`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct IndependentPackage {
    /// e.g. `nvidia-ml-py`.
    pub package: PackageName,
    /// Why it needs no CUDA runtime.
    pub reason: String,
    /// Where it is documented.
    pub source: String,
}

/// A wheel family and the CUDA major it carries, e.g. `nvidia-*-cu12` → 12.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FamilyRule {
    /// A name pattern with at most one `*`, e.g. `nvidia-*-cu12`.
    pub packages: String,
    /// Only these versions of the family, e.g. `>=13,<14`; `None` for all.
    #[serde(serialize_with = "serialize_optional_display")]
    pub versions: Option<VersionSpecifiers>,
    /// e.g. `12`.
    pub major: u32,
    /// Where it is documented.
    pub source: String,
}

/// Why a release carries a CUDA runtime of one major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeKind {
    /// Its local label, e.g. `cu130`.
    LocalLabel(String),
    /// Its project name matches a family, e.g. `nvidia-*-cu12`.
    Family(String),
}

/// What a release needs because of the CUDA runtime it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeRule {
    /// Label or family.
    pub kind: RuntimeKind,
    /// The CUDA major, e.g. `13`.
    pub major: u32,
    /// The specifier on the stack's runtime for JIT paths, e.g. `==13.*`.
    pub runtime: VersionSpecifiers,
    /// Where the label or family is documented.
    pub source: String,
    /// Where the same-major toolkit requirement is documented.
    pub jit_source: String,
}

/// A release whose `+cuXYZ` label names a CUDA major no row gives a driver floor for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeGap {
    /// e.g. `+cu140`: no `majors:` row for CUDA 14.
    UnknownMajor(u32),
}

/// The runtime rules.
#[derive(Debug, Clone)]
pub struct RuntimeRules {
    majors: Vec<MajorRule>,
    labels: Option<LocalLabelPolicy>,
    families: Vec<FamilyRule>,
    independent: Vec<IndependentPackage>,
}

/// The rows of one or more runtime files, each with where it was written, before the
/// checks of the whole table.
#[derive(Debug)]
pub(super) struct RuntimeLayer {
    majors: Vec<(MajorRule, At)>,
    labels: Option<LocalLabelPolicy>,
    families: Vec<(FamilyRule, At)>,
    independent: Vec<(IndependentPackage, At)>,
    file: String,
}

impl RuntimeLayer {
    /// Parse one file, with the checks of a file on its own.
    pub(super) fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        let mut parsed: Parsed<RuntimeFile> = super::file::parse(text, file)?;
        let majors = std::mem::take(&mut parsed.value.majors);
        let families = std::mem::take(&mut parsed.value.families);
        let independent = std::mem::take(&mut parsed.value.cuda_independent);
        let families: Vec<(FamilyRule, At)> = parsed
            .rows("families", families)
            .into_iter()
            .map(|(entry, at)| {
                (
                    FamilyRule {
                        packages: entry.packages,
                        versions: entry.versions,
                        major: entry.major,
                        source: entry.source,
                    },
                    at,
                )
            })
            .collect();
        let layer = Self {
            majors: parsed.rows("majors", majors),
            labels: parsed.value.local_labels.take(),
            families,
            independent: parsed.rows("cuda_independent", independent),
            file: file.to_string(),
        };
        if let Some((row, at)) = duplicate(&layer.majors, |row| row.major) {
            return Err(at.invalid(format!(
                "CUDA {} is listed twice under `majors:`",
                row.major
            )));
        }
        if let Some((family, at)) = layer
            .families
            .iter()
            .find(|(family, _)| family.packages.matches('*').count() > 1)
        {
            return Err(at.invalid(format!(
                "pattern `{}` has more than one `*`",
                family.packages
            )));
        }
        Ok(layer)
    }

    /// Lay a user's rows over these: the major, family (pattern and versions) or package
    /// of the same key is replaced, and a user's `local_labels:` replaces the policy. A
    /// user's new families come first: the first family that names a project decides.
    pub(super) fn layer(&mut self, over: Self) {
        layer(&mut self.majors, over.majors, |row| row.major, false);
        layer(&mut self.families, over.families, family_key, true);
        layer(
            &mut self.independent,
            over.independent,
            |entry| entry.package.clone(),
            false,
        );
        if over.labels.is_some() {
            self.labels = over.labels;
        }
    }

    /// The rules: every family names a CUDA major with a row.
    pub(super) fn build(self) -> Result<RuntimeRules, RulesError> {
        let Some(labels) = self.labels else {
            return Err(RulesError::Invalid {
                file: self.file,
                line: 1,
                message:
                    "missing `local_labels:`, where the `+cuXYZ` label convention is documented"
                        .to_string(),
            });
        };
        for (family, at) in &self.families {
            if !self.majors.iter().any(|(row, _)| row.major == family.major) {
                return Err(at.invalid(format!(
                    "family `{}` names CUDA {}, which has no row under `majors:`",
                    family.packages, family.major
                )));
            }
        }
        Ok(RuntimeRules {
            majors: self.majors.into_iter().map(|(row, _)| row).collect(),
            labels: Some(labels),
            families: self.families.into_iter().map(|(row, _)| row).collect(),
            independent: self.independent.into_iter().map(|(row, _)| row).collect(),
        })
    }
}

/// A family's key: its pattern and version range, e.g. `nvidia-cufft` `>=12,<13`.
fn family_key(family: &FamilyRule) -> (String, Option<String>) {
    (
        family.packages.clone(),
        family.versions.as_ref().map(ToString::to_string),
    )
}

impl RuntimeRules {
    /// The rules shipped in the binary, from the one parse of them ([`super::RuleSet::embedded`]).
    pub fn embedded() -> Result<Self, RulesError> {
        Ok(super::RuleSet::embedded()?.runtimes)
    }

    /// No rules (for resolving scenarios that know nothing of CUDA).
    pub fn empty() -> Self {
        Self {
            majors: Vec::new(),
            labels: None,
            families: Vec::new(),
            independent: Vec::new(),
        }
    }

    /// Parse a rule file's text.
    pub fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        RuntimeLayer::parse(text, file)?.build()
    }

    /// The driver floor of CUDA `major` under minor version compatibility, e.g. 13 → 580.65.06.
    pub fn major(&self, major: u32) -> Option<&MajorRule> {
        self.majors.iter().find(|row| row.major == major)
    }

    /// The rules that say which runtime `name version` carries, e.g. `torch 2.9.1+cu130`
    /// → CUDA 13 by its label; or why a release that should be classified is not.
    pub fn rules_for(
        &self,
        name: &PackageName,
        version: &Version,
    ) -> Result<Vec<RuntimeRule>, RuntimeGap> {
        let mut found = Vec::new();
        if let (Some(policy), [pep440_rs::LocalSegment::String(label), ..]) =
            (&self.labels, version.local())
            && let Some(cuda) = crate::cuda::CudaVersion::from_local_label(label)
        {
            if self.major(cuda.major()).is_none() {
                return Err(RuntimeGap::UnknownMajor(cuda.major()));
            }
            found.push(RuntimeRule {
                kind: RuntimeKind::LocalLabel(label.clone()),
                major: cuda.major(),
                runtime: major_specifier(cuda.major()),
                source: policy.source.clone(),
                jit_source: policy.jit_source.clone(),
            });
        }
        let jit_source = self
            .labels
            .as_ref()
            .map(|policy| policy.jit_source.clone())
            .unwrap_or_default();
        // The first row that names the project decides: specific rows come before the
        // generic name-suffix rows of the file.
        let family = self.families.iter().find(|rule| {
            glob_matches(&rule.packages, name.as_ref())
                && rule
                    .versions
                    .as_ref()
                    .is_none_or(|versions| versions.contains(version))
        });
        if let Some(rule) = family {
            found.push(RuntimeRule {
                kind: RuntimeKind::Family(rule.packages.clone()),
                major: rule.major,
                runtime: major_specifier(rule.major),
                source: rule.source.clone(),
                jit_source: jit_source.clone(),
            });
        }
        Ok(found)
    }

    /// Whether `name version` is an `nvidia-*` project that no row classifies, e.g.
    /// `nvidia-cutlass-dsl-libs-base 4.3.0`: it is assumed to carry no CUDA runtime, and
    /// the lock says so (unknown is not forbidden).
    pub fn assumed_independent(&self, name: &PackageName, version: &Version) -> bool {
        self.labels.is_some()
            && name.as_ref().starts_with("nvidia-")
            && !self.independent.iter().any(|entry| entry.package == *name)
            && self
                .rules_for(name, version)
                .is_ok_and(|rules| rules.is_empty())
    }

    /// The CUDA majors that have a row, newest first, e.g. `[13, 12]`.
    pub fn majors(&self) -> Vec<u32> {
        let mut majors: Vec<u32> = self.majors.iter().map(|row| row.major).collect();
        majors.sort_unstable_by(|a, b| b.cmp(a));
        majors
    }
}

/// `==13.*`: any release line of CUDA 13.
fn major_specifier(major: u32) -> VersionSpecifiers {
    let specifier =
        pep440_rs::VersionSpecifier::equals_star_version(Version::new([u64::from(major)]));
    VersionSpecifiers::from_iter([specifier])
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
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<VersionSpecifiers, D::Error> {
        let text = String::deserialize(deserializer)?;
        VersionSpecifiers::from_str(&text).map_err(serde::de::Error::custom)
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

    fn rules_for(name: &str, version: &str) -> Result<Vec<String>, RuntimeGap> {
        let rules = RuntimeRules::embedded().unwrap();
        Ok(rules
            .rules_for(
                &PackageName::from_str(name).unwrap(),
                &Version::from_str(version).unwrap(),
            )?
            .iter()
            .map(|rule| rule.runtime.to_string())
            .collect())
    }

    #[test]
    fn labels_and_families() {
        assert_eq!(rules_for("torch", "2.9.1+cu130").unwrap(), ["==13.*"]);
        assert_eq!(rules_for("torch", "2.9.1+cu128").unwrap(), ["==12.*"]);
        assert!(rules_for("torch", "2.9.1").unwrap().is_empty());
        assert_eq!(
            rules_for("nvidia-cublas-cu12", "12.8.4.1").unwrap(),
            ["==12.*"]
        );
        assert_eq!(rules_for("nvidia-nccl-cu13", "2.27.7").unwrap(), ["==13.*"]);
        assert_eq!(rules_for("cuda-toolkit", "13.0.2").unwrap(), ["==13.*"]);
        assert!(rules_for("nvidia-ml-py", "13.615.71").unwrap().is_empty());
    }

    /// The suffix-less CUDA 13 library wheels torch 2.9.1+cu130 pins, whose versions are
    /// their own and not CUDA's.
    #[test]
    fn suffixless_cuda_13_libraries() {
        for (name, version) in [
            ("nvidia-cublas", "13.0.0.19"),
            ("nvidia-cufft", "12.0.0.15"),
            ("nvidia-curand", "10.4.0.35"),
            ("nvidia-cusolver", "12.0.3.29"),
            ("nvidia-cusparse", "12.6.2.49"),
            ("nvidia-cufile", "1.15.0.42"),
        ] {
            assert_eq!(rules_for(name, version).unwrap(), ["==13.*"], "{name}");
        }
        let rules = RuntimeRules::embedded().unwrap();
        let name = |text: &str| PackageName::from_str(text).unwrap();
        let version = |text: &str| Version::from_str(text).unwrap();
        // Unknown is not forbidden: no rule, and the lock notes it as assumed.
        assert_eq!(
            rules_for("nvidia-cufft", "11.3.3.83").unwrap(),
            Vec::<String>::new()
        );
        assert!(rules.assumed_independent(&name("nvidia-something-new"), &version("1.0")));
        assert!(!rules.assumed_independent(&name("nvidia-ml-py"), &version("13.615.71")));
        assert!(!rules.assumed_independent(&name("nvidia-cublas"), &version("13.0.0.19")));
        assert_eq!(
            rules_for("torch", "3.0+cu140"),
            Err(RuntimeGap::UnknownMajor(14))
        );
    }

    #[test]
    fn minor_version_floors() {
        let rules = RuntimeRules::embedded().unwrap();
        assert_eq!(rules.major(13).unwrap().driver.to_string(), "580.65.06");
        assert_eq!(rules.major(12).unwrap().driver.to_string(), "525.60.13");
        assert_eq!(rules.major(11).unwrap().driver.to_string(), "450.80.02");
        assert!(rules.major(10).is_none());
        assert_eq!(rules.majors(), [13, 12, 11]);
    }
}
