//! The semantic diff of two manifests, for the reviewer of a pull request.
//!
//! Compares meaning, not text: a package whose pin moves from `==2.9.1` to
//! `==2.9.1+cu130` is a variant change, a toolkit update brings the driver minimum it
//! implies, and a secret's value is never carried into the diff. Rendering lives in
//! `report::diff`; this module builds plain data.

use std::collections::BTreeSet;

use pep440_rs::{Operator, Version, VersionSpecifiers};
use serde::Serialize;

use super::model::*;
use crate::rules::DriverTable;
use crate::shell;

mod benchmark;
mod packages;
pub(crate) use packages::direction;
use packages::{diff_packages, diff_pins};

/// The sections of a diff, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// `name`, `description`, `upgrade`.
    Manifest,
    /// `target`.
    Target,
    /// `toolkit`.
    Toolkit,
    /// `indexes`.
    Indexes,
    /// `packages`.
    Packages,
    /// `overrides`.
    Overrides,
    /// `constraints`.
    Constraints,
    /// `ldconfig`.
    Ldconfig,
    /// `env`.
    Env,
    /// `verify`.
    Verify,
    /// `benchmark`.
    Benchmark,
    /// The closure of the two resolutions (the locks), compared.
    Resolution,
    /// Rules a change newly triggers.
    Hazards,
}

impl Section {
    /// The heading, e.g. `Packages`.
    pub fn title(self) -> &'static str {
        match self {
            Self::Manifest => "Manifest",
            Self::Target => "Target",
            Self::Toolkit => "CUDA toolkit",
            Self::Indexes => "Indexes",
            Self::Packages => "Packages",
            Self::Overrides => "Overrides",
            Self::Constraints => "Constraints",
            Self::Ldconfig => "ldconfig",
            Self::Env => "Environment",
            Self::Verify => "Verification launch",
            Self::Benchmark => "Benchmark",
            Self::Resolution => "Resolution (locked closure, offline)",
            Self::Hazards => "Hazards",
        }
    }
}

/// How a pinned version moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VersionDirection {
    /// e.g. `0.6.3` → `0.6.4`.
    Upgrade,
    /// e.g. `2.10.0` → `2.9.1`.
    Downgrade,
    /// Same release, another build, e.g. `2.9.1` → `2.9.1+cu130`.
    VariantChange {
        /// e.g. `default build` or `+cu128`.
        from: String,
        /// e.g. `+cu130`.
        to: String,
    },
    /// A new release and a new build, e.g. `2.8.0+cu128` → `2.9.1+cu130`.
    UpgradeAndVariantChange {
        /// e.g. `+cu128`.
        from: String,
        /// e.g. `+cu130`.
        to: String,
    },
    /// A new release and a new build, downwards.
    DowngradeAndVariantChange {
        /// e.g. `+cu130`.
        from: String,
        /// e.g. `+cu128`.
        to: String,
    },
}

impl VersionDirection {
    /// e.g. `variant change: default build → +cu130`.
    pub fn describe(&self) -> String {
        match self {
            Self::Upgrade => "upgrade".to_string(),
            Self::Downgrade => "downgrade".to_string(),
            Self::VariantChange { from, to } => format!("variant change: {from} → {to}"),
            Self::UpgradeAndVariantChange { from, to } => {
                format!("upgrade, variant change: {from} → {to}")
            }
            Self::DowngradeAndVariantChange { from, to } => {
                format!("downgrade, variant change: {from} → {to}")
            }
        }
    }
}

/// What happened to one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// Only in the new manifest.
    Added {
        /// e.g. `==0.6.4`.
        new: String,
    },
    /// Only in the old manifest.
    Removed {
        /// e.g. `==0.6.3`.
        old: String,
    },
    /// In both, different.
    Changed {
        /// e.g. `12.8`.
        old: String,
        /// e.g. `13.0.1`.
        new: String,
        /// For versions: which way it moves.
        #[serde(skip_serializing_if = "Option::is_none")]
        direction: Option<VersionDirection>,
    },
}

/// One line of the diff with its notes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffEntry {
    /// Where it belongs.
    pub section: Section,
    /// What changed, e.g. `torch` or `CUDA_HOME` or `verify.timeout`.
    pub subject: String,
    /// How.
    #[serde(flatten)]
    pub change: Change,
    /// Consequences a reviewer must see, e.g. `driver minimum: ≥570.26 → ≥580.82.07`.
    pub notes: Vec<String>,
}

/// The diff of two manifests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManifestDiff {
    /// The old manifest as named on the command line.
    pub old: String,
    /// The new manifest as named on the command line.
    pub new: String,
    /// Every change, grouped by section in display order.
    pub entries: Vec<DiffEntry>,
    /// What a reviewer should know about how the diff was made, counted as no change,
    /// e.g. ``no lock beside `m.yaml`; `upgrade lock m.yaml` writes it``.
    pub notes: Vec<String>,
}

impl ManifestDiff {
    /// `true` when nothing differs.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

struct Builder<'a> {
    entries: Vec<DiffEntry>,
    drivers: &'a DriverTable,
}

impl Builder<'_> {
    fn push(
        &mut self,
        section: Section,
        subject: impl Into<String>,
        change: Change,
        notes: Vec<String>,
    ) {
        self.entries.push(DiffEntry {
            section,
            subject: subject.into(),
            change,
            notes,
        });
    }

    fn compare(
        &mut self,
        section: Section,
        subject: &str,
        old: Option<String>,
        new: Option<String>,
    ) {
        match (old, new) {
            (Some(old), Some(new)) if old != new => self.push(
                section,
                subject,
                Change::Changed {
                    old,
                    new,
                    direction: None,
                },
                Vec::new(),
            ),
            (Some(old), None) => self.push(section, subject, Change::Removed { old }, Vec::new()),
            (None, Some(new)) => self.push(section, subject, Change::Added { new }, Vec::new()),
            _ => {}
        }
    }
}

/// Diff `old` against `new`; `old_name` and `new_name` label the output.
pub fn diff(
    old: &Manifest,
    new: &Manifest,
    old_name: &str,
    new_name: &str,
    drivers: &DriverTable,
) -> ManifestDiff {
    let mut builder = Builder {
        entries: Vec::new(),
        drivers,
    };
    diff_manifest(&mut builder, old, new);
    diff_target(&mut builder, &old.target, &new.target);
    diff_toolkit(&mut builder, old.toolkit.as_ref(), new.toolkit.as_ref());
    diff_indexes(&mut builder, &old.indexes, &new.indexes);
    diff_packages(&mut builder, old, new);
    diff_pins(
        &mut builder,
        Section::Overrides,
        &old.overrides,
        &new.overrides,
    );
    diff_pins(
        &mut builder,
        Section::Constraints,
        &old.constraints,
        &new.constraints,
    );
    diff_ldconfig(&mut builder, old.ldconfig.as_ref(), new.ldconfig.as_ref());
    diff_env(&mut builder, &old.env, &new.env);
    diff_verify(&mut builder, old.verify.as_ref(), new.verify.as_ref());
    benchmark::diff_benchmark(&mut builder, old.benchmark.as_ref(), new.benchmark.as_ref());
    let mut entries = builder.entries;
    entries.sort_by_key(|entry| entry.section);
    ManifestDiff {
        old: old_name.to_string(),
        new: new_name.to_string(),
        entries,
        notes: Vec::new(),
    }
}

fn diff_manifest(b: &mut Builder<'_>, old: &Manifest, new: &Manifest) {
    b.compare(
        Section::Manifest,
        "name",
        Some(old.name.clone()),
        Some(new.name.clone()),
    );
    b.compare(
        Section::Manifest,
        "description",
        old.description.clone(),
        new.description.clone(),
    );
    b.compare(
        Section::Manifest,
        "upgrade",
        old.upgrade.as_ref().map(ToString::to_string),
        new.upgrade.as_ref().map(ToString::to_string),
    );
    let prereleases = |policy: Prereleases| match policy {
        Prereleases::IfNecessaryOrExplicit => "if-necessary-or-explicit".to_string(),
        Prereleases::Allow => "allow".to_string(),
    };
    b.compare(
        Section::Manifest,
        "prereleases",
        Some(prereleases(old.prereleases)),
        Some(prereleases(new.prereleases)),
    );
}

fn diff_target(b: &mut Builder<'_>, old: &Target, new: &Target) {
    let path = |p: &std::path::Path| p.display().to_string();
    b.compare(
        Section::Target,
        "target.python",
        Some(path(&old.python)),
        Some(path(&new.python)),
    );
    b.compare(
        Section::Target,
        "target.base_python",
        old.base_python.as_deref().map(path),
        new.base_python.as_deref().map(path),
    );
    b.compare(
        Section::Target,
        "target.python_version",
        old.python_version.clone(),
        new.python_version.clone(),
    );
    b.compare(
        Section::Target,
        "target.glibc",
        old.glibc.clone(),
        new.glibc.clone(),
    );
    b.compare(
        Section::Target,
        "target.driver",
        old.driver.as_ref().map(ToString::to_string),
        new.driver.as_ref().map(ToString::to_string),
    );
    b.compare(
        Section::Target,
        "target.cuda_wheels",
        old.cuda_wheels.map(|policy| policy.to_string()),
        new.cuda_wheels.map(|policy| policy.to_string()),
    );
    let scope = |scope: EnvScope| match scope {
        EnvScope::Environment => "environment",
        EnvScope::Interpreter => "interpreter",
    };
    if old.env_scope != new.env_scope {
        let notes = match new.env_scope {
            EnvScope::Interpreter => vec![
                "every environment of the base interpreter sees the `env` variables".to_string(),
            ],
            EnvScope::Environment => {
                vec!["only the target environment sees the `env` variables".to_string()]
            }
        };
        b.push(
            Section::Target,
            "target.env_scope",
            Change::Changed {
                old: scope(old.env_scope).to_string(),
                new: scope(new.env_scope).to_string(),
                direction: None,
            },
            notes,
        );
    }
    if old.keep_unlocked_packages != new.keep_unlocked_packages {
        let note = if new.keep_unlocked_packages {
            "`apply` keeps packages the lock does not name"
        } else {
            "`apply` removes every package the lock does not name"
        };
        b.push(
            Section::Target,
            "target.keep_unlocked_packages",
            Change::Changed {
                old: old.keep_unlocked_packages.to_string(),
                new: new.keep_unlocked_packages.to_string(),
                direction: None,
            },
            vec![note.to_string()],
        );
    }
    let archs = |t: &Target| {
        t.gpu_arch
            .iter()
            .map(ToString::to_string)
            .collect::<BTreeSet<_>>()
    };
    let (old_archs, new_archs) = (archs(old), archs(new));
    for arch in new_archs.difference(&old_archs) {
        b.push(
            Section::Target,
            "target.gpu_arch",
            Change::Added { new: arch.clone() },
            Vec::new(),
        );
    }
    for arch in old_archs.difference(&new_archs) {
        b.push(
            Section::Target,
            "target.gpu_arch",
            Change::Removed { old: arch.clone() },
            Vec::new(),
        );
    }
}

fn driver_note(drivers: &DriverTable, toolkit: &Toolkit) -> String {
    match drivers.minimum_for(&toolkit.version) {
        Some(found) => format!("needs driver ≥ {}", found.rule.driver),
        None => format!(
            "no driver minimum known for CUDA {}: `lock` refuses it until `{}` has its row",
            toolkit.version,
            crate::rules::CUDA_DRIVER_FILE
        ),
    }
}

fn diff_toolkit(b: &mut Builder<'_>, old: Option<&Toolkit>, new: Option<&Toolkit>) {
    match (old, new) {
        (None, None) => {}
        (Some(old), None) => {
            let notes = vec![format!(
                "prefix `{}` is no longer managed",
                old.prefix.display()
            )];
            b.push(
                Section::Toolkit,
                "toolkit",
                Change::Removed {
                    old: old.version.to_string(),
                },
                notes,
            );
        }
        (None, Some(new)) => {
            let notes = vec![
                driver_note(b.drivers, new),
                format!(
                    "installed into `{}` by {}",
                    new.prefix.display(),
                    new.installer
                ),
            ];
            b.push(
                Section::Toolkit,
                "toolkit",
                Change::Added {
                    new: new.version.to_string(),
                },
                notes,
            );
        }
        (Some(old), Some(new)) => {
            if old.version != new.version {
                let direction = if new.version > old.version {
                    VersionDirection::Upgrade
                } else {
                    VersionDirection::Downgrade
                };
                let old_minimum = b
                    .drivers
                    .minimum_for(&old.version)
                    .map(|found| found.rule.driver.to_string());
                let new_minimum = b
                    .drivers
                    .minimum_for(&new.version)
                    .map(|found| found.rule.driver.to_string());
                let mut notes = Vec::new();
                match (old_minimum, new_minimum) {
                    (Some(old_minimum), Some(new_minimum)) if old_minimum != new_minimum => {
                        notes.push(format!("driver minimum: ≥ {old_minimum} → ≥ {new_minimum}"));
                    }
                    _ => notes.push(driver_note(b.drivers, new)),
                }
                if new.version.major() != old.version.major() {
                    notes.push(format!(
                        "new CUDA major version: wheels built for CUDA {} (`+cu{}X`, `nvidia-*-cu{}`) do not load against CUDA {}",
                        old.version.major(), old.version.major(), old.version.major(), new.version.major()
                    ));
                }
                b.push(
                    Section::Toolkit,
                    "toolkit.version",
                    Change::Changed {
                        old: old.version.to_string(),
                        new: new.version.to_string(),
                        direction: Some(direction),
                    },
                    notes,
                );
            }
            let path = |p: &std::path::Path| p.display().to_string();
            b.compare(
                Section::Toolkit,
                "toolkit.prefix",
                Some(path(&old.prefix)),
                Some(path(&new.prefix)),
            );
            b.compare(
                Section::Toolkit,
                "toolkit.installer",
                Some(old.installer.to_string()),
                Some(new.installer.to_string()),
            );
            b.compare(
                Section::Toolkit,
                "toolkit.source.url",
                old.source.as_ref().map(|s| s.url.clone()),
                new.source.as_ref().map(|s| s.url.clone()),
            );
            b.compare(
                Section::Toolkit,
                "toolkit.source.sha256",
                old.source.as_ref().map(|s| s.sha256.to_string()),
                new.source.as_ref().map(|s| s.sha256.to_string()),
            );
            b.compare(
                Section::Toolkit,
                "toolkit.package",
                old.package.clone(),
                new.package.clone(),
            );
            b.compare(
                Section::Toolkit,
                "toolkit.keep_existing",
                Some(old.keep_existing.to_string()),
                Some(new.keep_existing.to_string()),
            );
        }
    }
}

fn describe_index(index: &Index) -> String {
    let url = index
        .url
        .clone()
        .unwrap_or_else(|| "pip's configured default index".to_string());
    if index.explicit {
        format!("{url} (explicit)")
    } else {
        url
    }
}

fn diff_indexes(b: &mut Builder<'_>, old: &[Index], new: &[Index]) {
    for index in new {
        match old.iter().find(|o| o.name == index.name) {
            None => b.push(
                Section::Indexes,
                &index.name,
                Change::Added {
                    new: describe_index(index),
                },
                Vec::new(),
            ),
            Some(previous) => {
                let notes = if previous.explicit && !index.explicit {
                    vec!["no longer explicit: it may now serve any package, including a different torch build".to_string()]
                } else {
                    Vec::new()
                };
                if describe_index(previous) != describe_index(index) {
                    b.push(
                        Section::Indexes,
                        &index.name,
                        Change::Changed {
                            old: describe_index(previous),
                            new: describe_index(index),
                            direction: None,
                        },
                        notes,
                    );
                }
            }
        }
    }
    for index in old.iter().filter(|o| !new.iter().any(|n| n.name == o.name)) {
        b.push(
            Section::Indexes,
            &index.name,
            Change::Removed {
                old: describe_index(index),
            },
            Vec::new(),
        );
    }
    let order = |indexes: &[Index]| indexes.iter().map(|i| i.name.clone()).collect::<Vec<_>>();
    let (old_order, new_order) = (order(old), order(new));
    let common_old: Vec<_> = old_order.iter().filter(|n| new_order.contains(n)).collect();
    let common_new: Vec<_> = new_order.iter().filter(|n| old_order.contains(n)).collect();
    if common_old != common_new {
        b.push(
            Section::Indexes,
            "order",
            Change::Changed {
                old: old_order.join(", "),
                new: new_order.join(", "),
                direction: None,
            },
            vec!["packages without an index come from the first index that has them".to_string()],
        );
    }
}

/// The exact version a specifier set pins, if it is a single `==` or `===`.
fn diff_ldconfig(b: &mut Builder<'_>, old: Option<&Ldconfig>, new: Option<&Ldconfig>) {
    let path = |p: &std::path::Path| p.display().to_string();
    let empty = Ldconfig {
        file: Default::default(),
        paths: Vec::new(),
        expect: Vec::new(),
    };
    let (o, n) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
    b.compare(
        Section::Ldconfig,
        "ldconfig.file",
        old.map(|l| path(&l.file)),
        new.map(|l| path(&l.file)),
    );
    let set = |items: Vec<String>| items.into_iter().collect::<BTreeSet<_>>();
    let (old_paths, new_paths) = (
        set(o.paths.iter().map(|p| path(p)).collect()),
        set(n.paths.iter().map(|p| path(p)).collect()),
    );
    for added in new_paths.difference(&old_paths) {
        b.push(
            Section::Ldconfig,
            "ldconfig.paths",
            Change::Added { new: added.clone() },
            Vec::new(),
        );
    }
    for removed in old_paths.difference(&new_paths) {
        b.push(
            Section::Ldconfig,
            "ldconfig.paths",
            Change::Removed {
                old: removed.clone(),
            },
            Vec::new(),
        );
    }
    let (old_expect, new_expect) = (set(o.expect.clone()), set(n.expect.clone()));
    for added in new_expect.difference(&old_expect) {
        b.push(
            Section::Ldconfig,
            "ldconfig.expect",
            Change::Added { new: added.clone() },
            vec!["must resolve through the dynamic linker after apply".to_string()],
        );
    }
    for removed in old_expect.difference(&new_expect) {
        b.push(
            Section::Ldconfig,
            "ldconfig.expect",
            Change::Removed {
                old: removed.clone(),
            },
            Vec::new(),
        );
    }
}

/// How an env value shows in a diff: secrets are `***`, whatever their source.
fn show_env(var: &EnvVar) -> String {
    let value = match (&var.value, var.secret) {
        (_, true) => "***".to_string(),
        (EnvValue::Literal(value), false) => value.clone(),
        (EnvValue::FromEnv(name), false) => format!("from controller env `{name}`"),
    };
    if var.override_existing {
        format!("{value} (override)")
    } else {
        value
    }
}

fn diff_env(b: &mut Builder<'_>, old: &[EnvVar], new: &[EnvVar]) {
    for var in new {
        let notes = if var.secret {
            vec!["secret".to_string()]
        } else {
            Vec::new()
        };
        match old.iter().find(|o| o.name == var.name) {
            None => b.push(
                Section::Env,
                &var.name,
                Change::Added { new: show_env(var) },
                notes,
            ),
            Some(previous)
                if previous.value != var.value
                    || previous.secret != var.secret
                    || previous.override_existing != var.override_existing =>
            {
                let mut notes = notes;
                if var.secret && previous.secret {
                    notes.push("secret value changed".to_string());
                }
                b.push(
                    Section::Env,
                    &var.name,
                    Change::Changed {
                        old: show_env(previous),
                        new: show_env(var),
                        direction: None,
                    },
                    notes,
                );
            }
            Some(_) => {}
        }
    }
    for var in old.iter().filter(|o| !new.iter().any(|n| n.name == o.name)) {
        b.push(
            Section::Env,
            &var.name,
            Change::Removed { old: show_env(var) },
            Vec::new(),
        );
    }
}

fn diff_verify(b: &mut Builder<'_>, old: Option<&Verify>, new: Option<&Verify>) {
    let path = |p: &std::path::Path| p.display().to_string();
    match (old, new) {
        (None, None) => {}
        (Some(old), None) => b.push(
            Section::Verify,
            "verify",
            Change::Removed {
                old: shell::join(&old.launch),
            },
            vec!["no verification launch after apply".to_string()],
        ),
        (None, Some(new)) => b.push(
            Section::Verify,
            "verify",
            Change::Added {
                new: shell::join(&new.launch),
            },
            Vec::new(),
        ),
        (Some(o), Some(n)) => {
            b.compare(
                Section::Verify,
                "verify.launch",
                Some(shell::join(&o.launch)),
                Some(shell::join(&n.launch)),
            );
            b.compare(
                Section::Verify,
                "verify.workdir",
                o.workdir.as_deref().map(path),
                n.workdir.as_deref().map(path),
            );
            b.compare(
                Section::Verify,
                "verify.log",
                Some(path(&o.log)),
                Some(path(&n.log)),
            );
            b.compare(
                Section::Verify,
                "verify.ready",
                Some(o.ready.clone()),
                Some(n.ready.clone()),
            );
            b.compare(
                Section::Verify,
                "verify.fail",
                Some(o.fail.join(", ")),
                Some(n.fail.join(", ")),
            );
            b.compare(
                Section::Verify,
                "verify.timeout",
                Some(format_duration(o.timeout)),
                Some(format_duration(n.timeout)),
            );
            b.compare(
                Section::Verify,
                "verify.require_idle_gpus",
                Some(o.require_idle_gpus.to_string()),
                Some(n.require_idle_gpus.to_string()),
            );
            b.compare(
                Section::Verify,
                "verify.health",
                o.health.clone(),
                n.health.clone(),
            );
            b.compare(
                Section::Verify,
                "verify.keep_running",
                Some(o.keep_running.to_string()),
                Some(n.keep_running.to_string()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn v(text: &str) -> Version {
        Version::from_str(text).unwrap()
    }

    #[test]
    fn directions() {
        assert_eq!(direction(&v("2.9.1"), &v("2.9.1")), None);
        assert_eq!(
            direction(&v("0.6.3"), &v("0.6.4")),
            Some(VersionDirection::Upgrade)
        );
        assert_eq!(
            direction(&v("2.10.0"), &v("2.9.1")),
            Some(VersionDirection::Downgrade)
        );
        assert_eq!(
            direction(&v("2.9.1"), &v("2.9.1+cu130")),
            Some(VersionDirection::VariantChange {
                from: "default build".into(),
                to: "+cu130".into()
            })
        );
        assert_eq!(
            direction(&v("2.8.0+cu128"), &v("2.9.1+cu130")),
            Some(VersionDirection::UpgradeAndVariantChange {
                from: "+cu128".into(),
                to: "+cu130".into()
            })
        );
    }
}
