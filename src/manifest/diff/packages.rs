//! The package part of a manifest diff: each package's direction (upgrade, downgrade,
//! variant change), its origin and index, and the overrides and constraints.

use super::*;

pub(super) fn pinned(specifiers: &VersionSpecifiers) -> Option<Version> {
    let mut iter = specifiers.iter();
    let first = iter.next()?;
    if iter.next().is_some() {
        return None;
    }
    match first.operator() {
        Operator::Equal | Operator::ExactEqual => Some(first.version().clone()),
        _ => None,
    }
}

pub(super) fn variant(version: &Version) -> String {
    if version.local().is_empty() {
        "default build".to_string()
    } else {
        let label = version
            .local()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(".");
        format!("+{label}")
    }
}

/// Which way a pin moves, e.g. `2.9.1` → `2.9.1+cu130` is a variant change.
pub(crate) fn direction(old: &Version, new: &Version) -> Option<VersionDirection> {
    let (old_base, new_base) = (old.clone().without_local(), new.clone().without_local());
    let (old_variant, new_variant) = (variant(old), variant(new));
    let variant_changed = old_variant != new_variant;
    match (old_base.cmp(&new_base), variant_changed) {
        (std::cmp::Ordering::Equal, false) => None,
        (std::cmp::Ordering::Equal, true) => Some(VersionDirection::VariantChange {
            from: old_variant,
            to: new_variant,
        }),
        (std::cmp::Ordering::Less, false) => Some(VersionDirection::Upgrade),
        (std::cmp::Ordering::Greater, false) => Some(VersionDirection::Downgrade),
        (std::cmp::Ordering::Less, true) => Some(VersionDirection::UpgradeAndVariantChange {
            from: old_variant,
            to: new_variant,
        }),
        (std::cmp::Ordering::Greater, true) => Some(VersionDirection::DowngradeAndVariantChange {
            from: old_variant,
            to: new_variant,
        }),
    }
}

pub(super) fn describe_origin(package: &Package) -> String {
    let extras = if package.extras.is_empty() {
        String::new()
    } else {
        format!("[{}]", package.extras.join(","))
    };
    match &package.origin {
        PackageOrigin::Index { specifiers, .. } => {
            let text = specifiers.to_string();
            if text.is_empty() {
                format!("{extras}any version")
            } else {
                format!("{extras}{text}")
            }
        }
        PackageOrigin::Git(git) => {
            let subdirectory = git
                .subdirectory
                .as_ref()
                .map(|s| format!("#subdirectory={s}"))
                .unwrap_or_default();
            format!("{extras}git {}@{}{subdirectory}", git.url, git.rev)
        }
    }
}

pub(super) fn index_of(package: &Package) -> Option<String> {
    match &package.origin {
        PackageOrigin::Index { index, .. } => Some(
            index
                .clone()
                .unwrap_or_else(|| "first index that has it".to_string()),
        ),
        PackageOrigin::Git(_) => None,
    }
}

pub(super) fn diff_packages(b: &mut Builder<'_>, old: &Manifest, new: &Manifest) {
    for package in &new.packages {
        let subject = package.name.to_string();
        let Some(previous) = old.package(&package.name) else {
            let mut notes = Vec::new();
            if let Some(index) = index_of(package) {
                notes.push(format!("from index: {index}"));
            }
            notes.extend(
                package
                    .reason
                    .iter()
                    .map(|reason| format!("reason: {reason}")),
            );
            b.push(
                Section::Packages,
                subject,
                Change::Added {
                    new: describe_origin(package),
                },
                notes,
            );
            continue;
        };
        let mut notes = Vec::new();
        let direction = match (&previous.origin, &package.origin) {
            (
                PackageOrigin::Index { specifiers: o, .. },
                PackageOrigin::Index { specifiers: n, .. },
            ) => match (pinned(o), pinned(n)) {
                (Some(o), Some(n)) => direction(&o, &n),
                _ => None,
            },
            (PackageOrigin::Git(o), PackageOrigin::Git(n)) => {
                let patches = |g: &GitSource| {
                    g.patches
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                };
                if patches(o) != patches(n) {
                    notes.push(format!(
                        "patches: [{}] → [{}]",
                        patches(o).join(", "),
                        patches(n).join(", ")
                    ));
                }
                match (&o.version, &n.version) {
                    (Some(o), Some(n)) => direction(o, n),
                    _ => None,
                }
            }
            (PackageOrigin::Index { .. }, PackageOrigin::Git(_)) => {
                notes.push("now built from source instead of an index release".to_string());
                None
            }
            (PackageOrigin::Git(_), PackageOrigin::Index { .. }) => {
                notes.push("now an index release instead of a source build".to_string());
                None
            }
        };
        if let (Some(o), Some(n)) = (index_of(previous), index_of(package))
            && o != n
        {
            notes.push(format!("index: {o} → {n}"));
        }
        if previous.reason != package.reason {
            notes.extend(
                package
                    .reason
                    .iter()
                    .map(|reason| format!("reason: {reason}")),
            );
        }
        let (old_text, new_text) = (describe_origin(previous), describe_origin(package));
        if old_text != new_text || !notes.is_empty() {
            b.push(
                Section::Packages,
                subject,
                Change::Changed {
                    old: old_text,
                    new: new_text,
                    direction,
                },
                notes,
            );
        }
    }
    for package in old
        .packages
        .iter()
        .filter(|p| new.package(&p.name).is_none())
    {
        let notes = new
            .overrides
            .iter()
            .map(|pin| ("overrides", pin))
            .chain(new.constraints.iter().map(|pin| ("constraints", pin)))
            .filter(|(_, pin)| pin.requirement.name == package.name)
            .map(|(section, pin)| format!("still pinned through {section}: {}", pin.requirement))
            .collect();
        b.push(
            Section::Packages,
            package.name.to_string(),
            Change::Removed {
                old: describe_origin(package),
            },
            notes,
        );
    }
}

pub(super) fn diff_pins(b: &mut Builder<'_>, section: Section, old: &[Pin], new: &[Pin]) {
    let name = |pin: &Pin| pin.requirement.name.to_string();
    for pin in new {
        let text = pin.requirement.to_string();
        match old.iter().find(|o| name(o) == name(pin)) {
            None => b.push(
                section,
                name(pin),
                Change::Added { new: text },
                vec![format!("reason: {}", pin.reason)],
            ),
            Some(previous) => {
                let old_text = previous.requirement.to_string();
                if old_text != text || previous.reason != pin.reason {
                    b.push(
                        section,
                        name(pin),
                        Change::Changed {
                            old: old_text,
                            new: text,
                            direction: None,
                        },
                        vec![format!("reason: {}", pin.reason)],
                    );
                }
            }
        }
    }
    for pin in old
        .iter()
        .filter(|o| !new.iter().any(|n| name(n) == name(o)))
    {
        b.push(
            section,
            name(pin),
            Change::Removed {
                old: pin.requirement.to_string(),
            },
            vec![format!("reason it had: {}", pin.reason)],
        );
    }
}
