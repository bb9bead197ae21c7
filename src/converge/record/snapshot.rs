//! `upgrade index snapshot`: the manifest as root requests (index packages with their
//! specifiers, extras and pinned index; a git package with a `version` as the same name
//! and version from the indexes, a metadata stand-in), each index located (pip's default
//! for one without a URL), the closure explored for the target environment through the
//! index client (`index::client::explore`) and written as a [`Snapshot`]. With `--live`
//! the manifest is resolved live for the node instead (`converge::resolve_live_universe`)
//! and exactly the releases that resolution visited are written; a manifest that cannot
//! be resolved is recorded too, so the snapshot replays the failure.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, Requirement};
use serde::Serialize;

use crate::converge::sources::{IndexSources, SourceError, index_sources};
use crate::converge::{self, LiveOptions};
use crate::index::Snapshot;
use crate::index::client::explore::TargetPlatform;
use crate::index::client::{
    ClientSettings, ExploreSettings, IndexClient, IndexSource, Reporter, RootRequest, explore,
    redact,
};
use crate::index::pip_config::DefaultIndex;
use crate::manifest::{Manifest, PackageOrigin};
use crate::resolve::TargetEnvironment;
use crate::rules::RuleSet;
use crate::text::text_value;

use super::{RecordError, redact_text, write_snapshot};

/// What to explore and where to write it.
pub struct SnapshotRequest<'a> {
    /// The manifest as read.
    pub manifest: &'a Manifest,
    /// Its file, for the recorded command line.
    pub manifest_path: &'a Path,
    /// The snapshot file to write.
    pub output: &'a Path,
    /// e.g. `3.12`; `None`: the manifest's `target.python_version`.
    pub python_version: Option<String>,
    /// e.g. `manylinux_2_35_x86_64`; `None`: from the manifest's `target.glibc`.
    pub platform: Option<String>,
    /// Fetch only these indexes (empty: all).
    pub only_index: Vec<String>,
    /// Extra roots, e.g. `nvidia-nccl-cu13==2.28.9`.
    pub with: Vec<String>,
    /// Follow dependencies (not `--no-deps`).
    pub transitive: bool,
    /// Bounds of the exploration.
    pub max_projects: usize,
    /// Versions read per requirement.
    pub max_versions: usize,
    /// Releases read in all.
    pub max_releases: usize,
    /// How to talk to the indexes.
    pub client: ClientSettings,
    /// The interpreter whose pip configuration names the default index.
    pub python: PathBuf,
}

/// What a snapshot run wrote, per index.
#[derive(Debug, Serialize)]
pub struct SnapshotReport {
    /// The snapshot file.
    pub file: String,
    /// Per manifest index.
    pub indexes: Vec<IndexReport>,
    /// Project pages read.
    pub projects_looked_up: usize,
    /// Release metadata read.
    pub releases_fetched: usize,
    /// What the exploration left out and why.
    pub notes: Vec<String>,
    /// Index name → where pip's default URL came from, for the text report.
    #[serde(skip)]
    pub default_sources: Vec<(String, String)>,
}

/// One index of a snapshot, e.g. `pytorch-cu130`: 12 packages, 40 releases.
#[derive(Debug, Serialize)]
pub struct IndexReport {
    /// e.g. `default`.
    pub name: String,
    /// Credentials removed; `None` when it was not fetched from.
    pub url: Option<String>,
    /// Projects recorded.
    pub packages: usize,
    /// Releases recorded.
    pub releases: usize,
}

/// Explore and write a snapshot: see the module's documentation. Progress goes to
/// `reporter`.
pub async fn record_snapshot(
    request: SnapshotRequest<'_>,
    reporter: &dyn Reporter,
) -> Result<SnapshotReport, RecordError> {
    let manifest = request.manifest;
    let python_version = request
        .python_version
        .clone()
        .or_else(|| manifest.target.python_version.clone())
        .ok_or(RecordError::NoPythonVersion)?;
    let platform_text = request.platform.clone().or_else(|| {
        manifest
            .target
            .glibc
            .as_ref()
            .map(|glibc| format!("manylinux_{}_x86_64", glibc.replace('.', "_")))
    });
    let platform = match &platform_text {
        Some(text) => Some(
            TargetPlatform::parse(text).ok_or_else(|| RecordError::Platform {
                value: text.clone(),
            })?,
        ),
        None => None,
    };
    for name in &request.only_index {
        if manifest.index(name).is_none() {
            return Err(RecordError::UnknownIndex {
                name: name.clone(),
                known: manifest
                    .indexes
                    .iter()
                    .map(|index| format!("`{}`", index.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    let with = request
        .with
        .iter()
        .map(|text| requirement(text, text))
        .collect::<Result<Vec<_>, _>>()?;
    let only_indexes = (!request.only_index.is_empty()).then(|| request.only_index.clone());
    let IndexSources { sources, defaults } = index_sources(
        manifest,
        &request.python,
        request.client.cache_dir.as_deref(),
        only_indexes.as_deref(),
    )
    .map_err(|error| match error {
        SourceError::Client(error) => RecordError::Client(error),
        SourceError::PipConfig(error) => RecordError::PipConfig(error),
    })?;
    let mut roots = root_requests(manifest)?;
    roots.extend(with.iter().map(|requirement| RootRequest {
        requirement: requirement.clone(),
        index: None,
    }));
    let full_version = full_python_version(&python_version)?;
    let (overrides, constraints) = crate::index::client::explore::manifest_requirements(manifest);
    let settings = ExploreSettings {
        markers: marker_environment(&full_version)?,
        python_version: full_version,
        platform,
        transitive: request.transitive,
        max_projects: request.max_projects,
        max_versions: request.max_versions,
        max_releases: request.max_releases,
        only_indexes: only_indexes.clone(),
        overrides,
        constraints,
        wheels_only: false,
    };
    let client = IndexClient::new(request.client.clone())?;
    let exploration = explore(&client, &sources, &roots, &settings, reporter).await?;

    let mut how = format!(
        "upgrade index snapshot {} --python-version {python_version}",
        request.manifest_path.display(),
    );
    if let Some(platform) = &platform_text {
        how.push_str(&format!(" --platform {platform}"));
    }
    for name in only_indexes.iter().flatten() {
        how.push_str(&format!(" --only-index {name}"));
    }
    for requirement in &with {
        how.push_str(&format!(" --with '{requirement}'"));
    }
    if !request.transitive {
        how.push_str(" --no-deps");
    }
    let snapshot = write_snapshot(how, exploration.universe, request.output)?;
    Ok(SnapshotReport {
        file: request.output.display().to_string(),
        indexes: index_reports(&snapshot, &sources, only_indexes.as_ref()),
        projects_looked_up: exploration.projects,
        releases_fetched: exploration.releases,
        notes: exploration.notes,
        default_sources: default_sources(&defaults),
    })
}

/// What to resolve live and where to write what it visited.
pub struct LiveSnapshotRequest<'a> {
    /// The manifest as read.
    pub manifest: &'a Manifest,
    /// Its file, for reports and the recorded command line.
    pub manifest_path: &'a Path,
    /// The node resolved for.
    pub environment: &'a TargetEnvironment,
    /// The facts file the node came from, for the recorded command line.
    pub facts: Option<&'a Path>,
    /// How the live resolution talks to the indexes.
    pub options: &'a LiveOptions,
    /// The snapshot file to write.
    pub output: &'a Path,
}

/// Resolve live and write the releases visited: see the module's documentation. A
/// failed resolution is written, then returned as the error.
pub fn record_live_snapshot(
    request: LiveSnapshotRequest<'_>,
) -> Result<SnapshotReport, RecordError> {
    let manifest = request.manifest;
    let file = request.manifest_path.display().to_string();
    let rules = RuleSet::load(manifest.rules.as_deref()).map_err(converge::ConvergeError::from)?;
    let resolution = converge::resolve_live_universe(
        manifest,
        &file,
        request.environment,
        &rules,
        request.options,
    )?;
    let mut how = format!("upgrade index snapshot {file} --live");
    if let Some(facts) = request.facts {
        how.push_str(&format!(" --facts {}", facts.display()));
    }
    let snapshot = write_snapshot(how, resolution.universe, request.output)?;
    if let Some(failure) = resolution.failure {
        return Err(converge::ConvergeError::Resolve(failure).into());
    }
    let mut default_url = None;
    let indexes = snapshot
        .universe
        .indexes
        .iter()
        .map(|contents| IndexReport {
            name: contents.name.clone(),
            url: match manifest.index(&contents.name).map(|index| &index.url) {
                Some(Some(url)) => Some(redact_text(url)),
                // Found again for the report (remembered): the resolution already used it.
                Some(None) => default_url
                    .get_or_insert_with(|| {
                        crate::index::pip_record::default_index(
                            request.options.python.as_os_str(),
                            request.options.client.cache_dir.as_deref(),
                        )
                        .ok()
                        .map(|found| redact_text(&found.url))
                    })
                    .clone(),
                None => None,
            },
            packages: contents.packages.len(),
            releases: contents.packages.values().map(Vec::len).sum(),
        })
        .collect();
    Ok(SnapshotReport {
        file: request.output.display().to_string(),
        indexes,
        projects_looked_up: resolution.summary.projects,
        releases_fetched: resolution.summary.releases,
        notes: resolution.summary.notes,
        default_sources: Vec::new(),
    })
}

impl SnapshotReport {
    /// The report as the text `index snapshot` prints.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for index in &self.indexes {
            let origin = self
                .default_sources
                .iter()
                .find(|(name, _)| name == &index.name)
                .map(|(_, source)| format!(" (pip's default index, from {source})"))
                .unwrap_or_default();
            text.push_str(&format!(
                "index `{}`{}: {} packages, {} releases{}\n",
                index.name,
                index
                    .url
                    .as_deref()
                    .map(|url| format!(" at {}", text_value(url)))
                    .unwrap_or_else(|| " (not fetched)".to_string()),
                index.packages,
                index.releases,
                origin,
            ));
        }
        for note in &self.notes {
            text.push_str(&format!("note: {}\n", text_value(note)));
        }
        text.push_str(&format!(
            "wrote {} ({} projects looked up, {} releases fetched)\n",
            self.file, self.projects_looked_up, self.releases_fetched
        ));
        text
    }
}

fn default_sources(defaults: &[(String, DefaultIndex)]) -> Vec<(String, String)> {
    defaults
        .iter()
        .map(|(name, found)| (name.clone(), found.source.to_string()))
        .collect()
}

/// Per index: its URL (credentials removed; `None` when it was not fetched from) and
/// what the snapshot holds of it.
fn index_reports(
    snapshot: &Snapshot,
    sources: &[IndexSource],
    only_indexes: Option<&Vec<String>>,
) -> Vec<IndexReport> {
    snapshot
        .universe
        .indexes
        .iter()
        .zip(sources)
        .map(|(contents, source)| IndexReport {
            name: contents.name.clone(),
            url: only_indexes
                .is_none_or(|only| only.contains(&contents.name))
                .then(|| redact(&source.location.url).into()),
            packages: contents.packages.len(),
            releases: contents.packages.values().map(Vec::len).sum(),
        })
        .collect()
}

/// `text` as a requirement; `name` says what it was in the error.
fn requirement(text: &str, name: &str) -> Result<Requirement, RecordError> {
    Requirement::from_str(text).map_err(|source| RecordError::Requirement {
        name: name.to_string(),
        source: Box::new(source),
    })
}

/// The manifest's packages as root requests.
fn root_requests(manifest: &Manifest) -> Result<Vec<RootRequest>, RecordError> {
    let mut roots = Vec::new();
    for package in &manifest.packages {
        let extras = if package.extras.is_empty() {
            String::new()
        } else {
            format!("[{}]", package.extras.join(","))
        };
        let (specifiers, index) = match &package.origin {
            PackageOrigin::Index { specifiers, index } => (specifiers.to_string(), index.clone()),
            PackageOrigin::Git(git) => match &git.version {
                Some(version) => (format!("=={version}"), None),
                // Without a version the checkout has no index stand-in.
                None => continue,
            },
        };
        let text = format!("{}{extras}{specifiers}", package.name);
        roots.push(RootRequest {
            requirement: requirement(&text, package.name.as_ref())?,
            index,
        });
    }
    Ok(roots)
}

/// `3.12` → `3.12.0`; `3.12.4` stays.
fn full_python_version(text: &str) -> Result<Version, RecordError> {
    let error = || RecordError::PythonVersion {
        value: text.to_string(),
    };
    let version = Version::from_str(text.trim()).map_err(|_| error())?;
    match version.release() {
        [_, _] => Version::from_str(&format!("{}.0", text.trim())).map_err(|_| error()),
        [_, _, _] => Ok(version),
        _ => Err(error()),
    }
}

/// Markers of the target: Linux on x86_64, CPython `version`.
fn marker_environment(version: &Version) -> Result<MarkerEnvironment, RecordError> {
    TargetEnvironment::linux_markers(version, "x86_64").map_err(|_| RecordError::PythonVersion {
        value: version.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_versions() {
        assert_eq!(full_python_version("3.12").unwrap().to_string(), "3.12.0");
        assert_eq!(full_python_version("3.11.7").unwrap().to_string(), "3.11.7");
        assert!(full_python_version("3").is_err());
    }
}
