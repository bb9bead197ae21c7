//! Whether a lock still fits: the node it is installed on (`plan --lock`, `apply
//! --lock`) and a fresh resolution of its manifest (`lock --check`).
//!
//! A lock holds on a node when the node offers what the resolution assumed: the same
//! interpreter line (markers and wheel tags), the same machine, at least the glibc and
//! the driver it assumed, only GPU architectures it was resolved for, and the same CUDA
//! runtime line. A lock matches a fresh resolution when every package is pinned to the
//! same version, index, file and digest (or git revision).

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::Serialize;

use super::environment::TargetEnvironment;
use super::lock::{Lock, LockedPackage, LockedSource};
use super::version_identity::same_version;
use crate::cuda::CudaVersion;
use crate::index::tags::Glibc;

/// One way a lock differs from a fresh resolution, e.g. `torch` locked `2.9.1+cu130`,
/// now `2.10.0+cu130`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockDifference {
    /// A package name, `manifest` (its digest) or `assumed <fact>` (a node value).
    pub what: String,
    /// What the lock says; `None` when the lock lacks it (a package added since).
    pub locked: Option<String>,
    /// What resolving now says; `None` when it is gone (a package removed since).
    pub now: Option<String>,
}

impl std::fmt::Display for LockDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |value: &Option<String>| value.clone().unwrap_or_else(|| "(none)".to_string());
        write!(
            f,
            "{}: locked {}, now {}",
            self.what,
            side(&self.locked),
            side(&self.now)
        )
    }
}

/// A package's pin as one line, e.g. `2.9.1+cu130 from pytorch-cu130
/// (torch-….whl sha256:ab…)`.
fn pin(package: &LockedPackage) -> String {
    format!("{}{}", package.version, pin_source(package))
}

/// A pin but for its version, e.g. `[srt] from pytorch-cu130 (torch-….whl sha256:ab…)`.
fn pin_source(package: &LockedPackage) -> String {
    let artifact = package.source.artifact();
    match &package.source {
        LockedSource::Index { index, .. } => {
            format!("{} from {index} ({artifact})", package.extras_suffix())
        }
        LockedSource::Git { .. } => format!("{} from {artifact}", package.extras_suffix()),
    }
}

/// Whether two pins hold the same: the same release by PEP 440 (`2` and `2.0.0`), from
/// the same source, file and digest, with the same extras.
fn same_pin(a: &LockedPackage, b: &LockedPackage) -> bool {
    same_version(&a.version.to_string(), &b.version.to_string()) && pin_source(a) == pin_source(b)
}

impl Lock {
    /// What differs between this lock and `now`, a fresh resolution of the same
    /// manifest: the manifest's inputs, the node values assumed, then each package, by
    /// name.
    pub fn differences(&self, now: &Lock) -> Vec<LockDifference> {
        let mut out = Vec::new();
        // What the manifest said, by meaning: a comment edit is no difference.
        match (&self.inputs, &now.inputs) {
            (Some(locked), Some(fresh)) => {
                for change in locked.changes(fresh) {
                    out.push(LockDifference {
                        what: "manifest".to_string(),
                        locked: None,
                        now: Some(change),
                    });
                }
            }
            (None, Some(_)) => out.push(LockDifference {
                what: "manifest inputs".to_string(),
                locked: None,
                now: Some("recorded (the lock was written by an earlier build)".to_string()),
            }),
            (_, None) => {}
        }
        let (locked, fresh) = (
            serde_json::to_value(&self.assumed).unwrap_or_default(),
            serde_json::to_value(&now.assumed).unwrap_or_default(),
        );
        if let (Some(locked), Some(fresh)) = (locked.as_object(), fresh.as_object()) {
            for (key, value) in fresh {
                let before = locked.get(key).cloned().unwrap_or_default();
                if before != *value {
                    let shown = |value: &serde_json::Value| match value {
                        serde_json::Value::Null => None,
                        serde_json::Value::String(text) => Some(text.clone()),
                        other => Some(other.to_string()),
                    };
                    out.push(LockDifference {
                        what: format!("assumed {key}"),
                        locked: shown(&before),
                        now: shown(value),
                    });
                }
            }
        }
        fn by_name(lock: &Lock) -> BTreeMap<&str, &LockedPackage> {
            lock.packages
                .iter()
                .map(|package| (package.name.as_ref(), package))
                .collect()
        }
        let (locked, fresh) = (by_name(self), by_name(now));
        let names: std::collections::BTreeSet<&str> =
            locked.keys().chain(fresh.keys()).copied().collect();
        for name in names {
            let (before, after) = (locked.get(name), fresh.get(name));
            let same = match (before, after) {
                (Some(before), Some(after)) => same_pin(before, after),
                (None, None) => true,
                _ => false,
            };
            if !same {
                out.push(LockDifference {
                    what: name.to_string(),
                    locked: before.map(|package| pin(package)),
                    now: after.map(|package| pin(package)),
                });
            }
        }
        out
    }

    /// Why this lock does not hold on `node` (the node's values as the resolver sees
    /// them), one sentence per fact; empty when it holds.
    pub fn mismatches(&self, node: &TargetEnvironment) -> Vec<String> {
        let assumed = &self.assumed;
        let mut out = Vec::new();
        let (major, minor) = node.python_minor();
        let locked_python: Vec<u32> = assumed
            .python
            .trim()
            .split('.')
            .take(2)
            .map(|part| part.parse().unwrap_or(u32::MAX))
            .collect();
        if locked_python != [major, minor] {
            out.push(format!(
                "python: the lock was resolved for Python {}, the node's interpreter is {} (markers and wheel tags differ)",
                assumed.python, node.python
            ));
        }
        if assumed.arch != node.arch {
            out.push(format!(
                "arch: the lock was resolved for {}, the node is {}",
                assumed.arch, node.arch
            ));
        }
        if let Ok(glibc) = Glibc::from_str(&assumed.glibc)
            && node.glibc < glibc
        {
            out.push(format!(
                "glibc: the lock was resolved for glibc {glibc} (its wheels may need it), the node has {}",
                node.glibc
            ));
        }
        if let Some(driver) = &assumed.driver {
            match &node.driver {
                None => out.push(format!(
                    "driver: the lock was resolved for NVIDIA driver {driver}, the node has none"
                )),
                Some(have) if have < driver => out.push(format!(
                    "driver: the lock was resolved for NVIDIA driver {driver}, the node has {have}"
                )),
                Some(_) => {}
            }
        }
        if !assumed.gpu_arch.is_empty() {
            let outside: Vec<String> = node
                .gpu_archs
                .iter()
                .filter(|arch| !assumed.gpu_arch.contains(arch))
                .map(ToString::to_string)
                .collect();
            if !outside.is_empty() {
                out.push(format!(
                    "gpu_arch: the node's {} {} not among the lock's [{}]",
                    outside.join(", "),
                    if outside.len() == 1 { "is" } else { "are" },
                    assumed
                        .gpu_arch
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        let runtime = |value: &Option<CudaVersion>| value.as_ref().map(CudaVersion::release);
        let locked_runtime = runtime(&assumed.cuda_runtime).or_else(|| runtime(&assumed.toolkit));
        let node_runtime = runtime(&node.cuda_runtime).or_else(|| runtime(&node.toolkit));
        if let Some(locked) = &locked_runtime
            && node_runtime.as_ref() != Some(locked)
        {
            out.push(format!(
                "cuda_runtime: the lock was resolved for CUDA {locked}, the node will have {}",
                node_runtime.map_or_else(|| "none".to_string(), |have| have.to_string())
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::FactsFile;

    fn lock(assumed: &str) -> Lock {
        Lock {
            schema: 1,
            manifest: crate::text::Line::new("m").unwrap(),
            manifest_sha256: Some("a".repeat(64).parse().unwrap()),
            inputs: None,
            assumed: serde_json::from_str(assumed).unwrap(),
            packages: Vec::new(),
            findings: Vec::new(),
        }
    }

    const H200: &str = r#"{"python": "3.12.3", "implementation": "cpython", "glibc": "2.39", "arch": "x86_64", "driver": "580.95.05", "gpu_arch": ["sm_90"], "toolkit": "13.0.1"}"#;

    fn node(text: &str) -> TargetEnvironment {
        let facts: FactsFile = serde_json::from_str(text).unwrap();
        TargetEnvironment::from_facts(facts).unwrap()
    }

    /// A lock written with `cffi 2` matches a fresh resolution that spells the same
    /// release `2.0.0`; another release, file or digest is a difference.
    #[test]
    fn a_release_spelled_otherwise_is_no_difference() {
        let with = |version: &str, file: &str| {
            let mut locked = lock(H200);
            locked.packages = serde_json::from_str(&format!(
                r#"[{{"name": "cffi", "version": "{version}", "source": "index", "index": "default", "file": "{file}", "sha256": "{}"}}]"#,
                "ab".repeat(32)
            ))
            .unwrap();
            locked
        };
        let file = "cffi-2.0.0-py3-none-any.whl";
        assert_eq!(with("2", file).differences(&with("2.0.0", file)), []);
        let other = with("2.0.1", "cffi-2.0.1-py3-none-any.whl");
        let differences = with("2", file).differences(&other);
        assert_eq!(differences.len(), 1, "{differences:?}");
        assert_eq!(
            differences[0].to_string(),
            format!(
                "cffi: locked 2 from default (cffi-2.0.0-py3-none-any.whl sha256:{ab}), now 2.0.1 from default (cffi-2.0.1-py3-none-any.whl sha256:{ab})",
                ab = "ab".repeat(32)
            )
        );
    }

    #[test]
    fn a_lock_holds_on_the_node_it_was_made_for_and_newer_ones() {
        let locked = lock(
            r#"{"python": "3.12", "implementation": "cpython", "glibc": "2.35", "arch": "x86_64", "driver": "580.82.07", "gpu_arch": ["sm_90", "sm_100"], "toolkit": "13.0.1"}"#,
        );
        assert_eq!(locked.mismatches(&node(H200)), Vec::<String>::new());
    }

    #[test]
    fn each_fact_that_does_not_hold_is_named() {
        let locked = lock(
            r#"{"python": "3.11", "implementation": "cpython", "glibc": "2.40", "arch": "x86_64", "driver": "590.44.01", "gpu_arch": ["sm_100"], "toolkit": "12.8"}"#,
        );
        let found = locked.mismatches(&node(H200)).join("\n");
        for fact in [
            "python: the lock was resolved for Python 3.11, the node's interpreter is 3.12.3",
            "glibc: the lock was resolved for glibc 2.40",
            "driver: the lock was resolved for NVIDIA driver 590.44.01, the node has 580.95.05",
            "gpu_arch: the node's sm_90 is not among the lock's [sm_100]",
            "cuda_runtime: the lock was resolved for CUDA 12.8, the node will have 13.0",
        ] {
            assert!(found.contains(fact), "{fact}\n{found}");
        }
    }
}
