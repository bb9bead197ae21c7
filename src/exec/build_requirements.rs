//! The build requirements of a source install, for a node that reaches no index
//! (`--fetch controller`). The controller reads `[build-system] requires` from the
//! `pyproject.toml` of the bundled commit with the crate's TOML reader
//! ([`crate::index::pyproject`]: no file or no table means `setuptools>=40.8.0`, as pip
//! assumes; a file that does not parse, or a direct reference, is an error). It resolves
//! them for the node with its own resolver, live over the manifest's indexes, wheels
//! only (no sdist is downloaded, built or accepted), downloads each wheel and checks it
//! against the sha256 its index gives, keeps the resolved set in its cache once per set
//! of requirements, node and indexes, and sends the node each wheel it lacks. The node
//! builds with `--no-index --find-links`.
//!
//! Nothing of the source runs on the controller: no pip, no build backend; the
//! requirements are names and version ranges read as data.

use std::fmt;
use std::path::{Path, PathBuf};

use pep508_rs::Requirement;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::index::client::explore::IndexSource;
use crate::index::client::live::LiveIndex;
use crate::index::client::{ClientSettings, IndexClient, IndexLocation};
use crate::index::filename::DistFilename;
use crate::index::pyproject::{self, MAX_PYPROJECT_BYTES};
use crate::resolve::{
    IndexPolicy, LockedSource, Origin, PackageSelection, Request, ResolveError, ResolveOptions,
    RootRequirement, TargetEnvironment,
};
use crate::rules::RuleSet;
use crate::steps::{BuildRequirements, KnownBuildRequirements, Operation, Step};
use crate::transport::{Transport, WriteSpec, Written, download};

use super::ExecError;
use super::send::{held, index_file_url, local_copy};

/// The most projects one set of build requirements may look up.
const MAX_PROJECTS: usize = 200;
/// The most releases whose metadata one set may read.
const MAX_RELEASES: usize = 1000;
/// What the cache of resolved sets is kept under, in the download cache.
const SETS_DIR: &str = "build-sets";
/// The schema of a cached set; a set of another schema is resolved again.
const SET_SCHEMA: u32 = 1;

/// One resolved build requirement: a wheel of an index, with the sha256 the index gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildPin {
    /// Normalized name, e.g. `setuptools`.
    pub name: pep508_rs::PackageName,
    /// Exact version, e.g. `80.9.0`.
    pub version: pep440_rs::Version,
    /// The index it comes from, e.g. `default`.
    pub index: crate::text::Line,
    /// The wheel's file name, one path component, e.g. `setuptools-80.9.0-py3-none-any.whl`.
    pub file: crate::index::filename::DistFileName,
    /// Its sha256, from the index.
    pub sha256: crate::manifest::Sha256,
}

impl fmt::Display for BuildPin {
    /// e.g. `setuptools==80.9.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=={}", self.name, self.version)
    }
}

/// A resolved build requirement's wheel, verified, in the controller's cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildWheel {
    /// What it is.
    pub pin: BuildPin,
    /// The verified copy in the download cache.
    pub local: PathBuf,
}

/// A resolved set as the cache keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct CachedSet {
    schema: u32,
    pins: Vec<BuildPin>,
}

/// Send the wheels of the build requirements of `build` (read from `bundle`) to the node;
/// `cache_dir` is the controller's download cache, `spec` how a wheel is written at a
/// path. What was written, and the pins sent (held ones included).
pub async fn send(
    transport: &Transport,
    cache_dir: &Path,
    spec: &dyn Fn(&Path) -> WriteSpec,
    bundle: &download::Bundle,
    build: &BuildRequirements,
) -> Result<(Vec<Written>, Vec<BuildPin>), ExecError> {
    let wheels = wheels(bundle, build, cache_dir).await?;
    if wheels.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let files: Vec<(&Path, PathBuf, &crate::manifest::Sha256)> = wheels
        .iter()
        .map(|wheel| {
            (
                wheel.local.as_path(),
                build.dir.join(&wheel.pin.file),
                &wheel.pin.sha256,
            )
        })
        .collect();
    let asked: Vec<(&Path, &crate::manifest::Sha256)> = files
        .iter()
        .map(|(_, path, sha256)| (path.as_path(), *sha256))
        .collect();
    let held = held(transport, &asked).await?;
    let outgoing: Vec<(PathBuf, WriteSpec)> = files
        .iter()
        .filter(|(_, path, _)| !held.contains(path))
        .map(|(local, path, _)| (local.to_path_buf(), spec(path)))
        .collect();
    let (written, result) = super::send::send_all(transport, &outgoing).await;
    result?;
    Ok((written, wheels.into_iter().map(|wheel| wheel.pin).collect()))
}

/// The verified wheels of the build requirements of `build`, read from the
/// `pyproject.toml` of `bundle`'s commit and resolved for the node; empty when the
/// project declares none.
pub async fn wheels(
    bundle: &download::Bundle,
    build: &BuildRequirements,
    cache_dir: &Path,
) -> Result<Vec<BuildWheel>, ExecError> {
    let file = pyproject_path(build);
    let text = bundle.file(&file, MAX_PYPROJECT_BYTES).await?;
    let requirements = pyproject::build_requires(text.as_deref(), &file).map_err(|source| {
        ExecError::BuildSystem {
            package: build.package.clone(),
            commit: bundle.commit.clone(),
            source: Box::new(source),
        }
    })?;
    if requirements.is_empty() {
        return Ok(Vec::new());
    }
    wheels_for(&requirements, &file, build, cache_dir).await
}

/// [`wheels`] of `requirements`, read from `file`: the set resolved before when the
/// cache has it, else resolved now and kept; each wheel downloaded unless a verified
/// copy is in the cache. Nodes of a fleet that need the same set wait for one
/// resolution.
pub async fn wheels_for(
    requirements: &[Requirement],
    file: &str,
    build: &BuildRequirements,
    cache_dir: &Path,
) -> Result<Vec<BuildWheel>, ExecError> {
    let failed = |reason: String| ExecError::BuildRequirements {
        package: build.package.clone(),
        requires: crate::text::text_value(
            &requirements
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        reason: crate::manifest::redact_text(&reason),
    };
    let path = set_path(requirements, build, cache_dir);
    let flight = download::in_flight(&path);
    let _flight = flight.lock().await;
    let pins = match read_set(&path).await {
        Some(pins) => pins,
        None => {
            let (requirements, file, owned) =
                (requirements.to_vec(), file.to_string(), build.clone());
            let pins = tokio::task::spawn_blocking(move || resolve(&requirements, &file, &owned))
                .await
                .map_err(|error| failed(error.to_string()))?
                .map_err(failed)?;
            write_set(&path, &pins)
                .await
                .map_err(|error| failed(error.to_string()))?;
            pins
        }
    };
    let mut wheels = Vec::new();
    for pin in pins {
        let index = build
            .resolution
            .indexes
            .iter()
            .find(|index| pin.index == index.name)
            .ok_or_else(|| failed(format!("the index `{}` is not configured", pin.index)))?;
        let local = local_copy(&pin.file, &pin.sha256, cache_dir, || {
            index_file_url(&index.name, &index.url, pin.name.as_ref(), &pin.file)
        })
        .await
        .map_err(|error| failed(crate::text::error_chain(&error).replace('\n', " ")))?;
        wheels.push(BuildWheel { pin, local });
    }
    Ok(wheels)
}

/// Where the source's `pyproject.toml` is in its repository, e.g. `python/pyproject.toml`.
fn pyproject_path(build: &BuildRequirements) -> String {
    match &build.subdirectory {
        Some(subdirectory) => format!("{}/pyproject.toml", subdirectory.trim_end_matches('/')),
        None => "pyproject.toml".to_string(),
    }
}

/// Fill in what the controller's cache knows of the build requirements of each source
/// in `steps` ([`known`]), for `plan` to show.
pub async fn note_known(steps: &mut [Step], cache_dir: &Path) {
    for step in steps {
        for operation in &mut step.operations {
            if let Operation::GitBundle {
                url,
                rev,
                build: Some(build),
                ..
            } = operation
            {
                build.known = known(url, rev, build, cache_dir).await;
            }
        }
    }
}

/// What the controller's cache knows of the build requirements of `build`, the source
/// at `url` `rev`, without fetching anything: the commit its clone holds for `rev`,
/// what that commit's `pyproject.toml` declares, and the set resolved for this node
/// before; `None` when the cache has no clone holding `rev`.
pub async fn known(
    url: &str,
    rev: &str,
    build: &BuildRequirements,
    cache_dir: &Path,
) -> Option<KnownBuildRequirements> {
    let (repo, commit) = download::cached_commit(url, rev, cache_dir).await?;
    let file = pyproject_path(build);
    let requirements = match download::file_at(&repo, &commit, &file, MAX_PYPROJECT_BYTES).await {
        Ok(text) => {
            pyproject::build_requires(text.as_deref(), &file).map_err(|error| error.to_string())
        }
        Err(error) => Err(error.to_string()),
    };
    let resolved = match &requirements {
        Ok(requirements) if !requirements.is_empty() => {
            read_set(&set_path(requirements, build, cache_dir))
                .await
                .map(|pins| pins.iter().map(ToString::to_string).collect())
        }
        _ => None,
    };
    Some(KnownBuildRequirements {
        commit,
        declared: requirements
            .map(|requirements| requirements.iter().map(ToString::to_string).collect()),
        resolved,
    })
}

/// The environment build requirements are resolved for: the node's, without the CUDA
/// runtime and toolkit. The build runs in an environment of its own, so the CUDA runtime
/// the stack loads says nothing of what its build tools may carry (pip and uv install a
/// `-cu12` build requirement beside a CUDA 13 stack); the interpreter, the machine,
/// glibc and the driver do constrain them.
fn build_environment(build: &BuildRequirements) -> crate::resolve::FactsFile {
    let mut facts = build.resolution.environment.clone();
    facts.cuda_runtime = None;
    facts.toolkit = None;
    facts
}

/// Where the cache keeps the set of `requirements` for the node of `build`.
fn set_path(requirements: &[Requirement], build: &BuildRequirements, cache_dir: &Path) -> PathBuf {
    cache_dir
        .join(SETS_DIR)
        .join(format!("{}.json", &set_key(requirements, build)[..16]))
}

/// The key of a set: its requirements, the node, the indexes (URLs hashed, never
/// stored) and the policies.
fn set_key(requirements: &[Requirement], build: &BuildRequirements) -> String {
    let resolution = &build.resolution;
    let mut parts: Vec<String> = vec![format!("build-requirements {SET_SCHEMA}")];
    parts.extend(requirements.iter().map(ToString::to_string));
    parts.push(serde_json::to_string(&build_environment(build)).unwrap_or_default());
    for index in &resolution.indexes {
        parts.push(format!("{} {} {}", index.name, index.url, index.explicit));
    }
    for (package, index) in &resolution.pins {
        parts.push(format!("{package} {index}"));
    }
    parts.push(format!("{:?}", resolution.options));
    let mut key = Sha256::new();
    for part in parts {
        key.update(part.as_bytes());
        key.update([0]);
    }
    hex::encode(key.finalize())
}

/// The cached set at `path`, when there is one that reads back whole.
async fn read_set(path: &Path) -> Option<Vec<BuildPin>> {
    let bytes = tokio::fs::read(path).await.ok()?;
    let set: CachedSet = serde_json::from_slice(&bytes).ok()?;
    (set.schema == SET_SCHEMA && set.pins.iter().all(|pin| wheel_file(&pin.file).is_ok()))
        .then_some(set.pins)
}

/// Keep `pins` at `path` (written whole, then renamed).
async fn write_set(path: &Path, pins: &[BuildPin]) -> std::io::Result<()> {
    let set = CachedSet {
        schema: SET_SCHEMA,
        pins: pins.to_vec(),
    };
    let bytes = serde_json::to_vec_pretty(&set).map_err(std::io::Error::other)?;
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || crate::local_file::write_atomic(&path, &bytes))
        .await
        .map_err(std::io::Error::other)?
}

/// Resolve `requirements` (from `file`) for the node of `build` over the manifest's
/// indexes, live, wheels only; `Err` says why, in words.
fn resolve(
    requirements: &[Requirement],
    file: &str,
    build: &BuildRequirements,
) -> Result<Vec<BuildPin>, String> {
    let resolution = &build.resolution;
    let environment = TargetEnvironment::from_facts(build_environment(build))
        .map_err(|error| error.to_string())?;
    let origin = Origin {
        file: file.to_string(),
        span: None,
    };
    let request = Request {
        name: format!("build requirements of {}", build.package),
        file: file.to_string(),
        requirements: requirements
            .iter()
            .map(|requirement| RootRequirement {
                requirement: requirement.clone(),
                index: resolution.pins.get(&requirement.name.to_string()).cloned(),
                git: None,
                origin: origin.clone(),
            })
            .collect(),
        overrides: Vec::new(),
        constraints: Vec::new(),
        indexes: resolution
            .indexes
            .iter()
            .map(|index| IndexPolicy {
                name: index.name.clone(),
                explicit: index.explicit,
            })
            .collect(),
        requires_python: None,
        options: ResolveOptions {
            no_build: PackageSelection::All,
            no_binary: PackageSelection::None,
            // Nor does the stack's CUDA wheel policy (see [`build_environment`]).
            cuda_wheels: crate::cuda::CudaWheelPolicy::Any,
            ..resolution.options.clone()
        },
    };
    let sources = resolution
        .indexes
        .iter()
        .map(|index| {
            Ok(IndexSource {
                location: IndexLocation::new(&index.name, &index.url)?,
                explicit: index.explicit,
            })
        })
        .collect::<Result<Vec<_>, crate::index::client::ClientError>>()
        .map_err(|error| error.to_string())?;
    let settings = crate::index::client::ExploreSettings {
        // No sdist is listed, so none is downloaded or built to read its metadata.
        wheels_only: true,
        ..crate::resolve::live_settings(&environment, MAX_PROJECTS, MAX_RELEASES)
            .map_err(|error| error.to_string())?
    };
    let pins = request.index_pins();
    let client = IndexClient::new(ClientSettings::default()).map_err(|error| error.to_string())?;
    let wait_limit = std::time::Duration::from_secs(300);
    let live = LiveIndex::new(client, sources, settings, pins, wait_limit)
        .map_err(|error| crate::text::error_chain(&error).replace('\n', " "))?;
    let rules = RuleSet::embedded().map_err(|error| error.to_string())?;
    let resolved = crate::resolve::resolve_live(&request, &live, &environment, &rules)
        .map_err(|error| crate::text::error_chain(&error).replace('\n', " "))?;
    let lock = match resolved.failure {
        Some(failure) => return Err(unresolvable(&failure)),
        None => crate::resolve::resolve(&request, &resolved.universe, &environment, &rules)
            .map_err(|error| unresolvable(&error))?,
    };
    lock.packages
        .into_iter()
        .map(|package| match package.source {
            LockedSource::Index {
                index,
                file,
                sha256,
            } => {
                wheel_file(&file)?;
                let sha256 = sha256
                    .ok_or_else(|| format!("index `{index}` gives no sha256 for `{file}`"))?;
                Ok(BuildPin {
                    name: package.name,
                    version: package.version,
                    index,
                    file,
                    sha256,
                })
            }
            LockedSource::Git { .. } => Err(format!(
                "`{}` resolved to a git checkout, which is not a wheel",
                package.name
            )),
        })
        .collect()
}

/// A resolution failure in words, on one line: the error and its report, and that
/// only wheels were taken.
fn unresolvable(error: &ResolveError) -> String {
    let text = match error {
        ResolveError::Unresolvable { report, .. } => format!("{error}: {report}"),
        other => crate::text::error_chain(other),
    };
    let mut lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    lines.push(
        "build requirements are taken as wheels only (no sdist is downloaded or built on the controller)",
    );
    lines.join("; ")
}

/// Check that `file` is a wheel's file name, e.g. `setuptools-80.9.0-py3-none-any.whl`:
/// an sdist, or a name that is no distribution's (`../`, a separator, a control
/// character: [`DistFilename::parse`] refuses those), is refused, named.
fn wheel_file(file: &str) -> Result<(), String> {
    match DistFilename::parse(file) {
        Ok(DistFilename::Wheel(_)) => Ok(()),
        Ok(DistFilename::Sdist(_)) => Err(format!(
            "`{}` is an sdist: build requirements come only as wheels (nothing is built on the controller)",
            crate::text::text_value(file)
        )),
        Err(error) => Err(format!("not a wheel: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_wheel_names_are_taken() {
        assert!(wheel_file("setuptools-80.9.0-py3-none-any.whl").is_ok());
        assert!(wheel_file("torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl").is_ok());
        for refused in [
            "setuptools-80.9.0.tar.gz",
            "../setuptools-80.9.0-py3-none-any.whl",
            "a/setuptools-80.9.0-py3-none-any.whl",
            "setuptools-80.9.0-py3-none-any.whl\nx",
            ".setuptools-80.9.0-py3-none-any.whl",
            "setuptools.whl",
        ] {
            assert!(wheel_file(refused).is_err(), "{refused:?}");
        }
        assert!(
            wheel_file("x-1.0.tar.gz")
                .unwrap_err()
                .contains("`x-1.0.tar.gz` is an sdist")
        );
    }
}
