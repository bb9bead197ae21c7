//! Rollback without a route to any index (`--fetch controller`): before a run changes a
//! node's Python environment, the controller fetches the files of the pre-apply versions
//! the run replaces or removes — the wheel its index lists for that exact version that
//! fits the node's tags best, verified by the index's sha256, once per digest in the
//! controller's cache — and keeps them on the node, root-only, beside the environment's
//! before-image ([`KEPT_WHEELS_DIR`]). A rollback installs them from there with
//! `--no-index --find-links`, as `apt` reinstalls from its kept archives. A version no
//! index lists (a local build, a direct URL) is named in the journal instead.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pep440_rs::Version;
use pep508_rs::PackageName;

use crate::exec::{ExecError, environment, held, local_copy, send_all};
use crate::index::client::{ClientSettings, IndexClient, IndexLocation, ProjectFile};
use crate::index::filename::DistFilename;
use crate::resolve::{Lock, LockedSource};
use crate::steps::pip::TOOLING;
use crate::transport::{Expected, Transport, WriteSpec};

/// Where a node keeps the wheels of its pre-apply packages for a rollback.
pub const KEPT_WHEELS_DIR: &str = "/var/lib/cuda-upgrade/before-images/wheels";

/// The project pages read for kept wheels, shared by a run's nodes: each (index,
/// project) page is read once a run, whatever the number of nodes.
#[derive(Default)]
pub struct Pages(std::sync::Mutex<HashMap<(String, PackageName), Arc<Page>>>);

/// One page: its files, `None` when the index has no such project, or why it failed.
type Page = tokio::sync::OnceCell<Result<Option<Vec<ProjectFile>>, String>>;

impl Pages {
    /// The files of `name` on `location`, read once.
    async fn files(
        &self,
        client: &IndexClient,
        location: &IndexLocation,
        name: &PackageName,
    ) -> Result<Option<Vec<ProjectFile>>, String> {
        let page = match self.0.lock() {
            Ok(mut pages) => Arc::clone(
                pages
                    .entry((location.url.to_string(), name.clone()))
                    .or_default(),
            ),
            Err(_) => Arc::default(),
        };
        page.get_or_init(|| async {
            client
                .fetch_project(location, name)
                .await
                .map_err(|error| error.to_string())
        })
        .await
        .clone()
    }
}

/// What was kept for a rollback.
#[derive(Debug, Default)]
pub struct Kept {
    /// The packages whose pre-apply wheel is on the node, e.g. `torch==2.9.1`.
    pub kept: Vec<String>,
    /// Those that are not, each with why, e.g. `sglang==0.5.9: no index lists a wheel …`.
    pub not_kept: Vec<String>,
}

/// The pre-apply packages of `before` (a `pip freeze --all`) that installing `lock`
/// replaces or removes: `(name, version)` of each pinned line whose version the lock
/// does not hold from an index, but for the packages it leaves alone (pip's own tooling, and every
/// unlocked one with `keep_unlocked`). Direct URL lines are reinstalled from their URL
/// and are left out.
pub fn replaced(before: &[u8], lock: &Lock, keep_unlocked: bool) -> Vec<(PackageName, Version)> {
    // A package the lock builds from git replaces an index install of any version.
    let locked: BTreeMap<String, Option<&Version>> = lock
        .packages
        .iter()
        .map(|package| {
            let from_index = matches!(package.source, LockedSource::Index { .. });
            (
                package.name.to_string(),
                from_index.then_some(&package.version),
            )
        })
        .collect();
    environment::parse_freeze(&String::from_utf8_lossy(before))
        .into_iter()
        .filter_map(|(name, line)| {
            let (_, version) = line.split_once("==")?;
            let version: Version = version.trim_start_matches('=').parse().ok()?;
            let unchanged = match locked.get(&name) {
                Some(locked) => *locked == Some(&version),
                None => keep_unlocked || TOOLING.contains(&name.as_str()),
            };
            let name = PackageName::new(name).ok()?;
            (!unchanged).then_some((name, version))
        })
        .collect()
}

/// Whether a rollback can install `install` (its requirement lines, e.g.
/// `torch===2.9.1`) from the kept wheels alone, with `--no-index`: none of them is
/// among the environment image's `not_kept`.
pub fn covers(not_kept: &[String], install: &[String]) -> bool {
    let name = |line: &str| {
        let name = line
            .split(['=', ' ', '@', ':'])
            .next()
            .unwrap_or(line)
            .to_string();
        PackageName::new(name).ok()
    };
    let missing: Vec<Option<PackageName>> = not_kept.iter().map(|line| name(line)).collect();
    install.iter().all(|line| !missing.contains(&name(line)))
}

/// Fetch (once per digest) and send the wheels of `packages` to the node's
/// [`KEPT_WHEELS_DIR`]; `tags` are the node's wheel tags, most preferred first;
/// `index_urls` the indexes to look in (name → URL).
pub async fn keep(
    transport: &Transport,
    pages: &Pages,
    packages: &[(PackageName, Version)],
    tags: &[String],
    index_urls: &BTreeMap<String, String>,
    cache_dir: &Path,
) -> Kept {
    let mut kept = Kept::default();
    let Ok(client) = IndexClient::new(ClientSettings::default()) else {
        return kept;
    };
    let lookup = Lookup {
        client: &client,
        pages,
        index_urls,
    };
    // The wheel of each version first, then one question for what the node holds.
    let mut chosen: Vec<(String, ProjectFile, crate::manifest::Sha256, PathBuf)> = Vec::new();
    for (name, version) in packages {
        let pin = format!("{name}=={version}");
        match choose(&lookup, name, version, tags).await {
            Ok((file, sha256)) => {
                let path = PathBuf::from(KEPT_WHEELS_DIR).join(&file.filename);
                chosen.push((pin, file, sha256, path));
            }
            Err(reason) => kept.not_kept.push(format!("{pin}: {reason}")),
        }
    }
    let asked: Vec<(&Path, &crate::manifest::Sha256)> = chosen
        .iter()
        .map(|(_, _, sha256, path)| (path.as_path(), sha256))
        .collect();
    let held = match held(transport, &asked).await {
        Ok(held) => held,
        Err(error) => {
            let reason = crate::text::error_chain(&error).replace('\n', " ");
            kept.not_kept
                .extend(chosen.iter().map(|(pin, ..)| format!("{pin}: {reason}")));
            return kept;
        }
    };
    // The verified copies of the wheels the node lacks, then one write for all of them.
    let mut pins = Vec::new();
    let mut outgoing = Vec::new();
    for (pin, file, sha256, path) in chosen {
        if held.contains(&path) {
            kept.kept.push(pin);
            continue;
        }
        let url = file.url.clone();
        let local = local_copy(&file.filename, &sha256, cache_dir, || async {
            Ok::<_, ExecError>(url)
        })
        .await;
        match local {
            Ok(local) => {
                let spec = WriteSpec {
                    secret: true,
                    private_directory: true,
                    expected: Expected::Any,
                    before_images: None,
                    ..WriteSpec::new(path, 0o600)
                };
                pins.push(pin);
                outgoing.push((local, spec));
            }
            Err(error) => kept.not_kept.push(format!(
                "{pin}: {}",
                crate::text::error_chain(&error).replace('\n', " ")
            )),
        }
    }
    let (written, result) = send_all(transport, &outgoing).await;
    let mut pins = pins.into_iter();
    kept.kept.extend(pins.by_ref().take(written.len()));
    if let Err(error) = result {
        let reason = crate::text::error_chain(&error).replace('\n', " ");
        kept.not_kept
            .extend(pins.map(|pin| format!("{pin}: {reason}")));
    }
    kept
}

/// Where [`choose`] looks a version up.
struct Lookup<'a> {
    client: &'a IndexClient,
    pages: &'a Pages,
    index_urls: &'a BTreeMap<String, String>,
}

/// The wheel of `name` `version` on the indexes that fits `tags` best, with its sha256.
async fn choose(
    lookup: &Lookup<'_>,
    name: &PackageName,
    version: &Version,
    tags: &[String],
) -> Result<(ProjectFile, crate::manifest::Sha256), String> {
    let index_urls = lookup.index_urls;
    let mut best: Option<(usize, ProjectFile)> = None;
    for (index, url) in index_urls {
        let location = IndexLocation::new(index, url).map_err(|error| error.to_string())?;
        let Some(files) = lookup.pages.files(lookup.client, &location, name).await? else {
            continue;
        };
        for file in files {
            let Some(rank) = rank(&file, version, tags) else {
                continue;
            };
            if best.as_ref().is_none_or(|(known, _)| rank < *known) {
                best = Some((rank, file));
            }
        }
    }
    best.and_then(|(_, file)| {
        let sha256 = file.sha256.clone()?;
        Some((file, sha256))
    })
    .ok_or_else(|| {
        format!(
            "no index of the manifest lists a wheel of this version with a sha256 for this node's tags ({})",
            index_urls.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    })
}

/// How well `file` fits: the position of its best tag among the node's `tags` (lower
/// is better); `None` when it is not a wheel of exactly `version` with a sha256 that
/// the node accepts.
fn rank(file: &ProjectFile, version: &Version, tags: &[String]) -> Option<usize> {
    let DistFilename::Wheel(wheel) = &file.dist else {
        return None;
    };
    if wheel.version != *version || file.sha256.is_none() {
        return None;
    }
    wheel
        .tags
        .iter()
        .filter_map(|tag| tags.iter().position(|known| *known == tag.to_string()))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::BEFORE_IMAGES_DIR;

    use crate::resolve::LockedPackage;

    fn locked(name: &str, version: &str, source: LockedSource) -> LockedPackage {
        LockedPackage {
            name: name.parse().unwrap(),
            version: version.parse().unwrap(),
            extras: Vec::new(),
            source,
            also_on_explicit: Vec::new(),
        }
    }

    fn index() -> LockedSource {
        LockedSource::Index {
            index: crate::text::Line::new("default").unwrap(),
            file: crate::index::filename::DistFileName::new("x-1.0-py3-none-any.whl").unwrap(),
            sha256: None,
        }
    }

    fn lock(packages: Vec<LockedPackage>) -> Lock {
        let mut lock: Lock = serde_json::from_value(serde_json::json!({
            "schema": crate::resolve::LOCK_SCHEMA,
            "manifest": "m",
            "assumed": {"python": "3.12", "implementation": "cpython", "glibc": "2.35",
                        "arch": "x86_64", "gpu_arch": []},
            "packages": [],
        }))
        .unwrap();
        lock.packages = packages;
        lock
    }

    fn pins(packages: &[(PackageName, Version)]) -> Vec<String> {
        packages
            .iter()
            .map(|(name, version)| format!("{name}=={version}"))
            .collect()
    }

    #[test]
    fn what_the_lock_replaces_or_removes_is_kept() {
        let before = b"pip==24.0\nnumpy==2.1.0\ntorch==2.9.1\nsglang==0.5.9\nextra==1.0\nlocal @ file:///opt/local\n";
        let git = LockedSource::Git {
            url: crate::text::Line::new("https://example.invalid/sglang").unwrap(),
            rev: crate::text::Line::new("v0.5.9").unwrap(),
            subdirectory: None,
        };
        let lock = lock(vec![
            locked("numpy", "2.1.0", index()),
            locked("torch", "2.9.1+cu130", index()),
            locked("sglang", "0.5.9", git),
        ]);
        assert_eq!(
            pins(&replaced(before, &lock, false)),
            ["extra==1.0", "sglang==0.5.9", "torch==2.9.1"]
        );
        assert_eq!(
            pins(&replaced(before, &lock, true)),
            ["sglang==0.5.9", "torch==2.9.1"]
        );
    }

    #[test]
    fn only_a_rollback_whose_every_wheel_was_kept_goes_without_an_index() {
        let not_kept = ["extra==1.0: no index of the manifest lists a wheel".to_string()];
        let covered = ["torch===2.9.1".to_string(), "sglang===0.5.9".to_string()];
        assert!(covers(&not_kept, &covered));
        assert!(!covers(&not_kept, &["Extra===1.0".to_string()]));
    }

    #[test]
    fn the_kept_wheels_live_among_the_before_images() {
        // A rollback restores no file there: the wheels stay for the next rollback.
        assert!(Path::new(KEPT_WHEELS_DIR).starts_with(BEFORE_IMAGES_DIR));
    }
}
