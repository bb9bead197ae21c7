//! The resolution-level part of `upgrade diff`: how the locked closure changes between
//! two manifests, and which hazards (rules) a change newly triggers.
//!
//! Works on two outcomes of [`resolve`](super::resolve) (a lock or a conflict) and
//! yields plain diff entries for `report::diff`; it never fails: a side that cannot be
//! resolved is itself a hazard.

use std::collections::BTreeMap;

use super::error::ResolveError;
use super::lock::{Lock, LockedPackage, LockedSource};
use crate::manifest::{self, Change, DiffEntry, Manifest, Section};
use crate::rules::RuleSet;
use crate::text::Line;

/// A side of the diff: the lock, or why there is none.
pub type Outcome = Result<Lock, ResolveError>;

/// Entries for the `Resolution` and `Hazards` sections.
pub fn resolution_entries(
    old_manifest: &Manifest,
    new_manifest: &Manifest,
    old: &Outcome,
    new: &Outcome,
    rules: &RuleSet,
) -> Vec<DiffEntry> {
    let mut entries = Vec::new();
    if let (Ok(old_lock), Ok(new_lock)) = (old, new) {
        closure_changes(old_lock, new_lock, &mut entries);
    }
    match (old, new) {
        (_, Err(error)) => {
            let notes = match error {
                ResolveError::Unresolvable { report, .. } => report
                    .facts
                    .iter()
                    .map(|fact| fact.short.clone())
                    .chain(report.hints.iter().map(|hint| format!("hint: {hint}")))
                    .collect(),
                other => vec![other.to_string()],
            };
            let was = if old.is_err() {
                " (the old one could not either)"
            } else {
                ""
            };
            entries.push(hazard(
                "resolution",
                format!("the new manifest cannot be resolved for its target{was}"),
                notes,
            ));
        }
        (Err(_), Ok(_)) => entries.push(DiffEntry {
            section: Section::Resolution,
            subject: "resolution".to_string(),
            change: Change::Changed {
                old: "cannot be resolved".to_string(),
                new: "resolves".to_string(),
                direction: None,
            },
            notes: Vec::new(),
        }),
        (Ok(_), Ok(_)) => {}
    }
    toolkit_hazards(old_manifest, new_manifest, rules, &mut entries);
    if let (Ok(old_lock), Ok(new_lock)) = (old, new) {
        explicit_index_hazards(old_lock, new_lock, &mut entries);
        if old_lock.assumed.cuda_runtime != new_lock.assumed.cuda_runtime {
            let show = |lock: &Lock| {
                lock.assumed
                    .cuda_runtime
                    .as_ref()
                    .map_or_else(|| "none".to_string(), ToString::to_string)
            };
            entries.push(DiffEntry {
                section: Section::Hazards,
                subject: "cuda-runtime".to_string(),
                change: Change::Changed {
                    old: show(old_lock),
                    new: show(new_lock),
                    direction: None,
                },
                notes: vec![
                    "every wheel built for the old runtime (`+cuXYZ` builds, `nvidia-*-cuNN` wheels) must change with it".to_string(),
                ],
            });
        }
    }
    entries
}

fn hazard(subject: &str, text: String, notes: Vec<String>) -> DiffEntry {
    DiffEntry {
        section: Section::Hazards,
        subject: subject.to_string(),
        change: Change::Added { new: text },
        notes,
    }
}

fn describe(package: &LockedPackage) -> String {
    match &package.source {
        LockedSource::Index { index, .. } => format!("{} ({index})", package.version),
        LockedSource::Git { rev, .. } => format!("{} (git {rev})", package.version),
    }
}

fn closure_changes(old: &Lock, new: &Lock, entries: &mut Vec<DiffEntry>) {
    let by_name = |lock: &Lock| -> BTreeMap<String, LockedPackage> {
        lock.packages
            .iter()
            .map(|package| (package.name.to_string(), package.clone()))
            .collect()
    };
    let (old_packages, new_packages) = (by_name(old), by_name(new));
    let mut names: Vec<&String> = old_packages.keys().chain(new_packages.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let change = match (old_packages.get(name), new_packages.get(name)) {
            (Some(before), Some(after))
                if before.version != after.version || before.source != after.source =>
            {
                let direction = manifest::direction(&before.version, &after.version);
                Change::Changed {
                    old: describe(before),
                    new: describe(after),
                    direction,
                }
            }
            (Some(_), Some(_)) | (None, None) => continue,
            (Some(before), None) => Change::Removed {
                old: describe(before),
            },
            (None, Some(after)) => Change::Added {
                new: describe(after),
            },
        };
        entries.push(DiffEntry {
            section: Section::Resolution,
            subject: name.clone(),
            change,
            notes: Vec::new(),
        });
    }
}

fn toolkit_hazards(old: &Manifest, new: &Manifest, rules: &RuleSet, entries: &mut Vec<DiffEntry>) {
    let (Some(old_toolkit), Some(new_toolkit)) = (&old.toolkit, &new.toolkit) else {
        return;
    };
    if old_toolkit.version.major() != new_toolkit.version.major() {
        entries.push(DiffEntry {
            section: Section::Hazards,
            subject: "cuda-toolkit".to_string(),
            change: Change::Changed {
                old: old_toolkit.version.to_string(),
                new: new_toolkit.version.to_string(),
                direction: None,
            },
            notes: vec![format!(
                "a toolkit major change: native extensions built for CUDA {} must be swapped for their CUDA {} builds, and `libnvrtc.so.{}` must be registered",
                old_toolkit.version.major(),
                new_toolkit.version.major(),
                new_toolkit.version.major()
            )],
        });
    }
    let minimum = |toolkit: &manifest::Toolkit| {
        rules
            .drivers
            .minimum_for(&toolkit.version)
            .map(|requirement| requirement.rule)
    };
    if let (Some(before), Some(after)) = (minimum(old_toolkit), minimum(new_toolkit))
        && after.driver > before.driver
    {
        let mut notes = vec![format!("source: {}", after.source)];
        if let Some(driver) = &new.target.driver
            && *driver < after.driver
        {
            notes.insert(
                0,
                format!("above `target.driver` {driver}: nodes must get a newer driver first"),
            );
        }
        entries.push(DiffEntry {
            section: Section::Hazards,
            subject: "driver minimum".to_string(),
            change: Change::Changed {
                old: format!("≥{}", before.driver),
                new: format!("≥{}", after.driver),
                direction: None,
            },
            notes,
        });
    }
}

fn explicit_index_hazards(old: &Lock, new: &Lock, entries: &mut Vec<DiffEntry>) {
    for package in &new.packages {
        if package.also_on_explicit.is_empty() {
            continue;
        }
        let before = old.package(package.name.as_ref());
        if before.is_some_and(|before| before.also_on_explicit == package.also_on_explicit) {
            continue;
        }
        let index = match &package.source {
            LockedSource::Index { index, .. } => index.to_string(),
            LockedSource::Git { .. } => "git".to_string(),
        };
        let holders: Vec<&str> = package.also_on_explicit.iter().map(Line::as_str).collect();
        entries.push(hazard(
            package.name.as_ref(),
            format!(
                "comes from `{index}` although explicit index `{}` also serves it",
                holders.join("`, `")
            ),
            vec![format!(
                "pin it with `index: {}` if that build is the one wanted; otherwise the first open index wins, which is how a default build gets swapped in",
                package.also_on_explicit[0]
            )],
        ));
    }
}
