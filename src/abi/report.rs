//! The check's report for a person (text: each missing symbol demangled, who needs it,
//! who should provide it, the nearest exported overloads side by side, a hint naming
//! the version pair) and for machines (`--format json`).

use serde::{Deserialize, Serialize};

use super::Environment;
use super::check::Outcome;
use crate::facts::{Finding, FindingCode, Severity};
use crate::text::text_value;

/// A distribution in the report, e.g. `torch` `2.11.0+cu130`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DistReport {
    /// e.g. `torch`.
    pub package: String,
    /// e.g. `2.11.0+cu130`.
    pub version: String,
}

/// An exported neighbour of a missing symbol.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NearestReport {
    /// Demangled.
    pub exported: String,
    /// Mangled.
    pub symbol: String,
    /// Its version, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The exporting file, e.g. `torch/lib/libc10_cuda.so`.
    pub object: String,
    /// What differs from the wanted symbol.
    pub differences: Vec<String>,
}

/// One missing symbol.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MissingReport {
    /// Who needs it.
    pub needed_by: DistReport,
    /// The needing file, e.g. `sgl_kernel/common_ops.abi3.so`.
    pub object: String,
    /// Demangled, e.g. `c10::cuda::c10_cuda_check_implementation(int, …)`.
    pub wanted: String,
    /// Mangled.
    pub symbol: String,
    /// The required version, e.g. `LIBX_2`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wanted_version: Option<String>,
    /// Who should provide it.
    pub provider: DistReport,
    /// The provider's files searched.
    pub searched: Vec<String>,
    /// The nearest exports, nearest first.
    pub nearest: Vec<NearestReport>,
    /// What to do.
    pub hint: String,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// Nothing missing.
    pub ok: bool,
    /// Where the environment was read.
    pub roots: Vec<String>,
    /// Distributions read.
    pub packages: usize,
    /// Shared objects read.
    pub objects: usize,
    /// Shared objects that load another distribution's libraries or need a known
    /// provider's symbols.
    pub objects_checked: usize,
    /// Undefined symbols looked up in another distribution.
    pub imports_checked: usize,
    /// The missing symbols.
    pub missing: Vec<MissingReport>,
    /// Files that could not be read.
    pub skipped: Vec<String>,
    /// How long reading and checking took.
    pub seconds: f64,
}

impl Report {
    /// The report of `outcome` on `environment`.
    pub fn new(environment: &Environment, outcome: &Outcome, seconds: f64) -> Self {
        let dist = |index: usize| {
            environment
                .dists
                .get(index)
                .map(|dist| DistReport {
                    package: dist.name.clone(),
                    version: dist.version.clone(),
                })
                .unwrap_or_else(|| DistReport {
                    package: "?".into(),
                    version: "?".into(),
                })
        };
        let shown = |object: usize| {
            environment
                .objects
                .get(object)
                .map(|object| object.shown.clone())
                .unwrap_or_default()
        };
        let missing: Vec<MissingReport> = outcome
            .missing
            .iter()
            .map(|missing| {
                let needer_dist = environment.objects.get(missing.object).map_or(usize::MAX, |o| o.dist);
                let needed_by = dist(needer_dist);
                let provider = dist(missing.provider);
                let same_name = missing
                    .nearest
                    .iter()
                    .any(|nearest| nearest.symbol == missing.import.name);
                let hint = if same_name {
                    format!(
                        "{} {} needs `{}` at version `{}`, which {} {} does not define: install builds of the two made for each other",
                        needed_by.package,
                        needed_by.version,
                        missing.import.name,
                        missing.import.version.as_deref().unwrap_or("none"),
                        provider.package,
                        provider.version
                    )
                } else {
                    format!(
                        "{} {} was built against a different {} than the {} {} installed here: install the {} build made for {} {}, or the {} it was built against",
                        needed_by.package,
                        needed_by.version,
                        provider.package,
                        provider.package,
                        provider.version,
                        needed_by.package,
                        provider.package,
                        provider.version,
                        provider.package
                    )
                };
                MissingReport {
                    object: shown(missing.object),
                    wanted: missing.demangled.clone(),
                    symbol: missing.import.name.clone(),
                    wanted_version: missing.import.version.clone(),
                    searched: missing.searched.iter().map(|object| shown(*object)).collect(),
                    nearest: missing
                        .nearest
                        .iter()
                        .map(|nearest| NearestReport {
                            exported: nearest.demangled.clone(),
                            symbol: nearest.symbol.clone(),
                            version: nearest.version.clone(),
                            object: shown(nearest.object),
                            differences: nearest.differences.clone(),
                        })
                        .collect(),
                    needed_by,
                    provider,
                    hint,
                }
            })
            .collect();
        Self {
            ok: missing.is_empty(),
            roots: environment.roots.clone(),
            packages: environment.dists.len(),
            objects: environment.objects.len(),
            objects_checked: outcome.objects_checked,
            imports_checked: outcome.imports_checked,
            missing,
            skipped: environment.skipped.clone(),
            seconds,
        }
    }

    /// For a terminal; `node` names where it ran, e.g. `local`.
    pub fn text(&self, node: &str) -> String {
        let node = text_value(node);
        let mut out = String::new();
        for missing in &self.missing {
            out.push_str(&format!(
                "{node}: missing symbol: {} {} `{}` needs from {} {}:\n",
                text_value(&missing.needed_by.package),
                text_value(&missing.needed_by.version),
                text_value(&missing.object),
                text_value(&missing.provider.package),
                text_value(&missing.provider.version),
            ));
            let version = missing
                .wanted_version
                .as_deref()
                .map(|version| format!(" @{}", text_value(version)))
                .unwrap_or_default();
            out.push_str(&format!(
                "    wanted    {}{version}\n",
                text_value(&missing.wanted)
            ));
            if missing.nearest.is_empty() {
                out.push_str(&format!(
                    "    exported  nothing of that name (searched {})\n",
                    text_value(&missing.searched.join(", "))
                ));
            }
            for nearest in &missing.nearest {
                let version = nearest
                    .version
                    .as_deref()
                    .map(|version| format!(" @{}", text_value(version)))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "    exported  {}{version}   in {}\n",
                    text_value(&nearest.exported),
                    text_value(&nearest.object)
                ));
                for difference in &nearest.differences {
                    out.push_str(&format!("              {}\n", text_value(difference)));
                }
            }
            out.push_str(&format!("    symbol    {}\n", text_value(&missing.symbol)));
            out.push_str(&format!("    hint: {}\n", text_value(&missing.hint)));
        }
        for skipped in &self.skipped {
            out.push_str(&format!("{node}: skipped {}\n", text_value(skipped)));
        }
        let counts = format!(
            "{} packages, {} shared objects, {} use another package's libraries, {} symbols looked up across packages, {:.2} s",
            self.packages, self.objects, self.objects_checked, self.imports_checked, self.seconds
        );
        if self.ok {
            out.push_str(&format!(
                "{node}: abi-check passed: no missing symbols ({counts})\n"
            ));
        } else {
            out.push_str(&format!(
                "{node}: abi-check FAILED: {} missing symbol{} ({counts})\n",
                self.missing.len(),
                if self.missing.len() == 1 { "" } else { "s" }
            ));
        }
        out
    }

    /// Probe findings: one warning per needing file and providing package, naming its
    /// first missing symbol and the nearest export.
    pub fn findings(&self) -> Vec<Finding> {
        let mut found: Vec<Finding> = Vec::new();
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for missing in &self.missing {
            let key = (missing.object.as_str(), missing.provider.package.as_str());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let count = self
                .missing
                .iter()
                .filter(|other| (other.object.as_str(), other.provider.package.as_str()) == key)
                .count();
            let more = if count > 1 {
                format!(" (and {} more)", count - 1)
            } else {
                String::new()
            };
            let nearest = missing
                .nearest
                .first()
                .map(|nearest| format!("; it exports `{}`", nearest.exported))
                .unwrap_or_default();
            found.push(Finding {
                severity: Severity::Warning,
                code: FindingCode::AbiSymbolMissing,
                message: format!(
                    "`{}` of {} {} needs `{}`{more}, which {} {} does not export{nearest}",
                    missing.object,
                    missing.needed_by.package,
                    missing.needed_by.version,
                    missing.wanted,
                    missing.provider.package,
                    missing.provider.version,
                ),
                hint: Some(format!(
                    "{}; `upgrade abi-check` shows every missing symbol",
                    missing.hint
                )),
            });
        }
        found
    }

    /// For machines.
    pub fn json(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }
}
