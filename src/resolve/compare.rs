//! The resolution-level part of `upgrade diff`: how the locked closure changes between
//! two manifests, and which hazards (rules) a change newly triggers.
//!
//! Works on two outcomes, each a lock (read beside the manifest, or from
//! [`resolve`](super::resolve)) or a conflict, and yields plain diff entries for
//! `report::diff`; it never fails: a side that cannot be resolved is itself a hazard, a
//! side that was not resolved at all (`None`) is left out.

use std::collections::BTreeMap;

use super::error::ResolveError;
use super::lock::{Lock, LockedPackage, LockedSource};
use crate::manifest::{self, Change, DiffEntry, Manifest, Section};
use crate::rules::RuleSet;
use crate::text::Line;

/// A side of the diff: the lock, or why there is none.
pub type Outcome = Result<Lock, ResolveError>;

/// Entries for the `Resolution` and `Hazards` sections; `None` for a side that was not
/// resolved (no lock, and a snapshot that does not record its packages).
pub fn resolution_entries(
    old_manifest: &Manifest,
    new_manifest: &Manifest,
    old: Option<&Outcome>,
    new: Option<&Outcome>,
    rules: &RuleSet,
) -> Vec<DiffEntry> {
    let mut entries = Vec::new();
    if let (Some(Ok(old_lock)), Some(Ok(new_lock))) = (old, new) {
        closure_changes(old_lock, new_lock, &mut entries);
    }
    match (old, new) {
        (_, Some(Err(error))) => {
            let notes = match error {
                // `diff` takes no `--snapshot`: the lock beside the manifest is its way.
                ResolveError::Unresolvable { report, .. } => report
                    .facts
                    .iter()
                    .map(|fact| fact.short.clone())
                    .chain(
                        report
                            .hints
                            .iter()
                            .filter(|hint| !hint.contains("`--snapshot"))
                            .map(|hint| format!("hint: {hint}")),
                    )
                    .collect(),
                other => vec![other.to_string()],
            };
            let was = if matches!(old, Some(Err(_))) {
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
        (Some(Err(_)), Some(Ok(_))) => entries.push(DiffEntry {
            section: Section::Resolution,
            subject: "resolution".to_string(),
            change: Change::Changed {
                old: "cannot be resolved".to_string(),
                new: "resolves".to_string(),
                direction: None,
            },
            notes: Vec::new(),
        }),
        _ => {}
    }
    toolkit_hazards(old_manifest, new_manifest, rules, &mut entries);
    if let (Some(Ok(old_lock)), Some(Ok(new_lock))) = (old, new) {
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

/// Per package: added, removed, a new version (upgrade, downgrade, variant change), a
/// new index or source; for the same version, a new file or digest (shown as the files
/// themselves). A digest change on the same file name is also a hazard.
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
    let mut digests = Vec::new();
    for name in names {
        let (change, notes) = match (old_packages.get(name), new_packages.get(name)) {
            (Some(before), Some(after))
                if before.version != after.version || before.source != after.source =>
            {
                let direction = manifest::direction(&before.version, &after.version);
                let (mut shown_old, mut shown_new) = (describe(before), describe(after));
                if shown_old == shown_new {
                    // Same version from the same place: what differs is the artifact.
                    shown_old = before.source.artifact();
                    shown_new = after.source.artifact();
                }
                if let Some(hazard) = digest_hazard(before, after) {
                    digests.push(hazard);
                }
                (
                    Change::Changed {
                        old: shown_old,
                        new: shown_new,
                        direction,
                    },
                    source_notes(&before.source, &after.source),
                )
            }
            (Some(_), Some(_)) | (None, None) => continue,
            (Some(before), None) => (
                Change::Removed {
                    old: describe(before),
                },
                Vec::new(),
            ),
            (None, Some(after)) => (
                Change::Added {
                    new: describe(after),
                },
                Vec::new(),
            ),
        };
        entries.push(DiffEntry {
            section: Section::Resolution,
            subject: name.clone(),
            change,
            notes,
        });
    }
    entries.extend(digests);
}

/// What a reader of `0.5.9 (git v0.5.9)` → `0.5.9 (git v0.5.10)` does not see: another
/// repository or subdirectory.
fn source_notes(before: &LockedSource, after: &LockedSource) -> Vec<String> {
    let mut notes = Vec::new();
    if let (
        LockedSource::Git {
            url: old_url,
            subdirectory: old_subdirectory,
            ..
        },
        LockedSource::Git {
            url: new_url,
            subdirectory: new_subdirectory,
            ..
        },
    ) = (before, after)
    {
        if old_url != new_url {
            notes.push(format!("git repository: {old_url} → {new_url}"));
        }
        if old_subdirectory != new_subdirectory {
            let show = |subdirectory: &Option<Line>| {
                subdirectory
                    .as_ref()
                    .map_or_else(|| "the repository root".to_string(), ToString::to_string)
            };
            notes.push(format!(
                "subdirectory: {} → {}",
                show(old_subdirectory),
                show(new_subdirectory)
            ));
        }
    }
    notes
}

/// A file of the same name with another recorded sha256: the release was uploaded
/// again, or the lock was edited.
fn digest_hazard(before: &LockedPackage, after: &LockedPackage) -> Option<DiffEntry> {
    let (_, old_file, Some(old_sha256)) = before.index_file()? else {
        return None;
    };
    let (index, new_file, Some(new_sha256)) = after.index_file()? else {
        return None;
    };
    if old_file != new_file || old_sha256 == new_sha256 {
        return None;
    }
    Some(hazard(
        before.name.as_ref(),
        format!("`{new_file}` has another sha256 than before"),
        vec![
            format!("sha256: {old_sha256} → {new_sha256}"),
            format!(
                "the release was uploaded again or the lock was edited: check the digest `{index}` serves before merging"
            ),
        ],
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(packages: &str) -> Lock {
        Lock::from_json(&format!(
            r#"{{"schema": 1, "manifest": "t", "assumed": {{"python": "3.12", "implementation": "cpython", "glibc": "2.39", "arch": "x86_64", "gpu_arch": []}}, "packages": [{packages}]}}"#
        ))
        .unwrap()
    }

    /// Another repository at the same revision, and the same version from another
    /// index, each show what moved; neither is a digest hazard.
    #[test]
    fn source_and_index_changes_show_what_moved() {
        let old = lock(
            r#"{"name": "app", "version": "1.0", "source": "git", "url": "https://example.invalid/a/app", "rev": "v1.0"},
               {"name": "lib", "version": "2.0", "source": "index", "index": "default", "file": "lib-2.0-py3-none-any.whl", "sha256": "1111111111111111111111111111111111111111111111111111111111111111"}"#,
        );
        let new = lock(
            r#"{"name": "app", "version": "1.0", "source": "git", "url": "https://example.invalid/b/app", "rev": "v1.0", "subdirectory": "python"},
               {"name": "lib", "version": "2.0", "source": "index", "index": "mirror", "file": "lib-2.0-py3-none-any.whl", "sha256": "1111111111111111111111111111111111111111111111111111111111111111"}"#,
        );
        let mut entries = Vec::new();
        closure_changes(&old, &new, &mut entries);
        assert_eq!(entries.len(), 2, "{entries:#?}");
        assert_eq!(
            entries[0].change,
            Change::Changed {
                old: "git https://example.invalid/a/app@v1.0".to_string(),
                new: "git https://example.invalid/b/app@v1.0 (python)".to_string(),
                direction: None,
            }
        );
        assert_eq!(
            entries[0].notes,
            [
                "git repository: https://example.invalid/a/app → https://example.invalid/b/app",
                "subdirectory: the repository root → python",
            ]
        );
        assert_eq!(
            entries[1].change,
            Change::Changed {
                old: "2.0 (default)".to_string(),
                new: "2.0 (mirror)".to_string(),
                direction: None,
            }
        );
        assert!(
            entries
                .iter()
                .all(|entry| entry.section == Section::Resolution)
        );
    }
}
