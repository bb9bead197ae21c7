//! What a lock's resolution depended on, recorded in the lock: the manifest's indexes,
//! packages (specifiers, extras, index pins, git sources), overrides, constraints,
//! pre-release policy, `target` values the resolver reads and the toolkit release.
//!
//! A lock is fresh while these equal the manifest's: comments, key order, `env`,
//! `verify`, `service`, `ldconfig`, reasons and provenance do not stale it, and a stale
//! lock names each input that changed (as uv's and Terraform's locks do).

use serde::{Deserialize, Serialize};

use crate::manifest::{Manifest, PackageOrigin};
use crate::text::Line;

/// The inputs of a resolution, as the lock records them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockInputs {
    /// The indexes in manifest order.
    pub indexes: Vec<InputIndex>,
    /// The direct packages in manifest order.
    pub packages: Vec<InputPackage>,
    /// Overrides, as written, e.g. `flashinfer-python==0.6.4`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<Line>,
    /// Constraints, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Line>,
    /// The manifest's pre-release policy, e.g. `if-necessary-or-explicit`.
    pub prereleases: Line,
    /// The `target` values the resolver reads.
    pub target: InputTarget,
    /// The toolkit release, e.g. `13.0.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<Line>,
}

/// One index as the resolution used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputIndex {
    /// e.g. `pytorch-cu130`.
    pub name: Line,
    /// The URL, credentials masked; `None`: the index pip is configured with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Line>,
    /// Serves only the packages that name it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explicit: bool,
}

/// One direct package as the resolution used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputPackage {
    /// Normalized name, e.g. `sgl-kernel`.
    pub name: Line,
    /// The specifiers, e.g. `==0.3.21`; none for any version or a git source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specifiers: Option<Line>,
    /// The index it is pinned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<Line>,
    /// Extras, e.g. `["srt"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extras: Vec<Line>,
    /// A git source: `URL@REV[#subdirectory] (version)`, credentials masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<Line>,
}

/// The `target` values the resolver reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct InputTarget {
    /// e.g. `3.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_version: Option<Line>,
    /// e.g. `2.35`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<Line>,
    /// e.g. `580.82.07`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<Line>,
    /// e.g. `["sm_90"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_arch: Vec<Line>,
    /// The CUDA wheel policy, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_wheels: Option<Line>,
}

fn line(text: impl AsRef<str>) -> Line {
    Line::escaping(text.as_ref())
}

fn display_json<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

impl LockInputs {
    /// What resolving `manifest` depends on.
    pub fn of(manifest: &Manifest) -> Self {
        let indexes = manifest
            .indexes
            .iter()
            .map(|index| InputIndex {
                name: line(&index.name),
                url: index
                    .url
                    .as_deref()
                    .map(|url| line(crate::manifest::redact_url(url))),
                explicit: index.explicit,
            })
            .collect();
        let packages = manifest
            .packages
            .iter()
            .map(|package| {
                let (specifiers, index, git) = match &package.origin {
                    PackageOrigin::Index { specifiers, index } => {
                        (specifiers.to_string(), index.as_deref().map(line), None)
                    }
                    PackageOrigin::Git(git) => {
                        let mut text =
                            format!("{}@{}", crate::manifest::redact_url(&git.url), git.rev);
                        if let Some(subdirectory) = &git.subdirectory {
                            text.push_str(&format!("#{subdirectory}"));
                        }
                        if let Some(version) = &git.version {
                            text.push_str(&format!(" ({version})"));
                        }
                        (String::new(), None, Some(line(text)))
                    }
                };
                InputPackage {
                    name: line(&package.name),
                    specifiers: Some(line(specifiers)).filter(|text| !text.is_empty()),
                    index,
                    extras: package.extras.iter().map(line).collect(),
                    git,
                }
            })
            .collect();
        let pins = |pins: &[crate::manifest::Pin]| -> Vec<Line> {
            pins.iter()
                .map(|pin| line(pin.requirement.to_string()))
                .collect()
        };
        let target = &manifest.target;
        Self {
            indexes,
            packages,
            overrides: pins(&manifest.overrides),
            constraints: pins(&manifest.constraints),
            prereleases: line(display_json(&manifest.prereleases)),
            target: InputTarget {
                python_version: target.python_version.as_deref().map(line),
                glibc: target.glibc.as_deref().map(line),
                driver: target
                    .driver
                    .as_ref()
                    .map(|driver| line(driver.to_string())),
                gpu_arch: target
                    .gpu_arch
                    .iter()
                    .map(|arch| line(arch.to_string()))
                    .collect(),
                cuda_wheels: target
                    .cuda_wheels
                    .as_ref()
                    .map(|policy| line(display_json(policy))),
            },
            toolkit: manifest
                .toolkit
                .as_ref()
                .map(|toolkit| line(toolkit.version.to_string())),
        }
    }

    /// What changed from `self` (the lock's) to `now` (the manifest's), one phrase per
    /// input, e.g. `torch: ==2.8.0 → ==2.9.0`; empty when the lock is fresh.
    pub fn changes(&self, now: &LockInputs) -> Vec<String> {
        let mut out = Vec::new();
        keyed(
            &mut out,
            "index",
            &self.indexes,
            &now.indexes,
            |index| index.name.to_string(),
            |index| {
                let mut text = index.url.as_deref().unwrap_or("pip's index").to_string();
                if index.explicit {
                    text.push_str(" (explicit)");
                }
                text
            },
        );
        keyed(
            &mut out,
            "package",
            &self.packages,
            &now.packages,
            |package| package.name.to_string(),
            describe_package,
        );
        listed(&mut out, "override", &self.overrides, &now.overrides);
        listed(&mut out, "constraint", &self.constraints, &now.constraints);
        if self.prereleases != now.prereleases {
            out.push(format!(
                "prereleases: {} → {}",
                self.prereleases, now.prereleases
            ));
        }
        let (was, is) = (&self.target, &now.target);
        let option = |value: &Option<Line>| {
            value
                .as_deref()
                .map_or_else(|| "(unset)".to_string(), str::to_string)
        };
        for (field, before, after) in [
            ("python_version", &was.python_version, &is.python_version),
            ("glibc", &was.glibc, &is.glibc),
            ("driver", &was.driver, &is.driver),
            ("cuda_wheels", &was.cuda_wheels, &is.cuda_wheels),
        ] {
            if before != after {
                out.push(format!(
                    "target.{field}: {} → {}",
                    option(before),
                    option(after)
                ));
            }
        }
        if was.gpu_arch != is.gpu_arch {
            let join = |archs: &[Line]| {
                archs
                    .iter()
                    .map(Line::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push(format!(
                "target.gpu_arch: [{}] → [{}]",
                join(&was.gpu_arch),
                join(&is.gpu_arch)
            ));
        }
        if self.toolkit != now.toolkit {
            out.push(format!(
                "toolkit: {} → {}",
                option(&self.toolkit),
                option(&now.toolkit)
            ));
        }
        out
    }
}

fn describe_package(package: &InputPackage) -> String {
    let mut text = match &package.git {
        Some(git) => format!("git {git}"),
        None => package
            .specifiers
            .as_deref()
            .unwrap_or("any version")
            .to_string(),
    };
    if !package.extras.is_empty() {
        let extras: Vec<&str> = package.extras.iter().map(Line::as_str).collect();
        text.push_str(&format!(" [{}]", extras.join(",")));
    }
    if let Some(index) = &package.index {
        text.push_str(&format!(" from {index}"));
    }
    text
}

/// Entries matched by key: added, removed, changed.
fn keyed<T>(
    out: &mut Vec<String>,
    what: &str,
    was: &[T],
    is: &[T],
    key: impl Fn(&T) -> String,
    describe: impl Fn(&T) -> String,
) {
    for old in was {
        match is.iter().find(|new| key(new) == key(old)) {
            None => out.push(format!("{what} {} removed", key(old))),
            Some(new) if describe(new) != describe(old) => out.push(format!(
                "{what} {}: {} → {}",
                key(old),
                describe(old),
                describe(new)
            )),
            Some(_) => {}
        }
    }
    for new in is {
        if !was.iter().any(|old| key(old) == key(new)) {
            out.push(format!("{what} {} added ({})", key(new), describe(new)));
        }
    }
}

/// Requirements, matched by the package they name: what left, what came, what changed.
fn listed(out: &mut Vec<String>, what: &str, was: &[Line], is: &[Line]) {
    let name = |requirement: &Line| -> String {
        requirement
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
            .replace('_', "-")
    };
    for old in was.iter().filter(|old| !is.contains(old)) {
        match is
            .iter()
            .find(|new| !was.contains(new) && name(new) == name(old))
        {
            Some(new) => out.push(format!("{what} `{old}` → `{new}`")),
            None => out.push(format!("{what} `{old}` removed")),
        }
    }
    for new in is.iter().filter(|new| !was.contains(new)) {
        if !was
            .iter()
            .any(|old| !is.contains(old) && name(old) == name(new))
        {
            out.push(format!("{what} `{new}` added"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(text: &str) -> Manifest {
        crate::manifest::load_str(text, "m.yaml", None).unwrap()
    }

    const BASE: &str = "schema: 1\nname: m\ntarget:\n  python: /usr/bin/python3\n  python_version: '3.12'\nindexes:\n  - name: default\npackages:\n  cffi: '==2.0.0'\n";

    #[test]
    fn comments_env_and_reasons_keep_a_lock_fresh() {
        let before = LockInputs::of(&manifest(BASE));
        let edited = format!("# a comment\n{BASE}env:\n  NCCL_DEBUG: WARN\n");
        assert!(
            before
                .changes(&LockInputs::of(&manifest(&edited)))
                .is_empty()
        );
    }

    #[test]
    fn a_changed_pin_is_named() {
        let before = LockInputs::of(&manifest(BASE));
        let changed = BASE.replace("==2.0.0", "==1.17.1");
        let changes = before.changes(&LockInputs::of(&manifest(&changed)));
        assert_eq!(changes, vec!["package cffi: ==2.0.0 → ==1.17.1"]);
        let python = BASE.replace("'3.12'", "'3.13'");
        let changes = before.changes(&LockInputs::of(&manifest(&python)));
        assert_eq!(changes, vec!["target.python_version: 3.12 → 3.13"]);
    }

    #[test]
    fn inputs_round_trip_through_json() {
        let inputs = LockInputs::of(&manifest(BASE));
        let text = serde_json::to_string(&inputs).unwrap();
        assert_eq!(serde_json::from_str::<LockInputs>(&text).unwrap(), inputs);
    }
}
