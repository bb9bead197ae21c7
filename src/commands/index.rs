//! `upgrade index snapshot MANIFEST -o FILE`, `upgrade index hash MANIFEST` and
//! `upgrade index default-url`.
//!
//! `snapshot` turns the manifest into root requests (index packages with their
//! specifiers, extras and pinned index; a git package with a `version` as the same
//! name and version from the indexes, a metadata stand-in), resolves each index's URL
//! (an index without `url` is pip's default), explores the closure for the target
//! environment through the index client, and writes a [`Snapshot`]. The exploration
//! itself is `index::client::explore`; this file only wires flags to it. With `--live`
//! it resolves the manifest live for the node instead (`converge::resolve_live_universe`)
//! and writes exactly the releases that resolution visited.
//!
//! `hash` resolves the manifest for a node exactly as `plan` does (the same snapshot,
//! the digests already recorded beside the manifest, the node's facts), takes each
//! locked index file that still has no sha256, finds it on its index's project page
//! and records the sha256 of the bytes the index serves in the manifest's hashes file
//! (`index::hashes`). `commands::node::hash_command` is the command line the pip step
//! names when a locked file has no sha256, repeating how the plan chose its node.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, MarkerEnvironmentBuilder, PackageName, Requirement};
use serde::Serialize;

use crate::cli::{
    IndexCommand, IndexDefaultUrlArgs, IndexFormat, IndexHashArgs, IndexSnapshotArgs, NetworkArgs,
};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::converge;
use crate::exec;
use crate::index::client::explore::TargetPlatform;
use crate::index::client::{
    ClientError, ClientSettings, ExploreSettings, IndexClient, IndexLocation, IndexSource,
    Reporter, RootRequest, explore, redact,
};
use crate::index::hashes::{HASHES_SCHEMA, RecordedHash, RecordedHashes};
use crate::index::pip_config::{self, DefaultIndex, PipConfigError};
use crate::index::{SNAPSHOT_SCHEMA, Snapshot, SnapshotError};
use crate::manifest::{self, Manifest, PackageOrigin};
use crate::printer::Printer;
use crate::resolve::{LockedSource, TargetEnvironment};
use crate::rules::RuleSet;
use crate::settings;

/// Failed to run an `index` verb.
#[derive(Debug, thiserror::Error)]
pub enum IndexCommandError {
    /// Talking to an index failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// pip's default index could not be found.
    #[error(transparent)]
    PipConfig(#[from] PipConfigError),
    /// The snapshot file could not be written.
    #[error("Failed to write snapshot `{}`", path.display())]
    Snapshot {
        /// e.g. `snapshot.json`.
        path: PathBuf,
        /// Why.
        #[source]
        source: SnapshotError,
    },
    /// The async runtime could not start.
    #[error("Failed to start the network runtime")]
    Runtime(#[source] std::io::Error),
    /// No target Python version is known.
    #[error(
        "Failed to choose the target Python version: the manifest has no `target.python_version` and `--python-version` is not given"
    )]
    NoPythonVersion,
    /// The target Python version does not parse.
    #[error(
        "Failed to parse the target Python version `{value}`: expected `MAJOR.MINOR[.PATCH]`, e.g. `3.12`"
    )]
    PythonVersion {
        /// e.g. `three`.
        value: String,
    },
    /// The platform tag does not parse.
    #[error(
        "Failed to parse the platform `{value}`: expected `manylinux_X_Y_ARCH`, e.g. `manylinux_2_35_x86_64`"
    )]
    Platform {
        /// e.g. `win_amd64`.
        value: String,
    },
    /// `--only-index` names an index the manifest does not have.
    #[error(
        "Failed to select index `{name}`: the manifest has no index of that name (it has {known})"
    )]
    UnknownIndex {
        /// e.g. `pypi`.
        name: String,
        /// e.g. `` `pytorch-cu130`, `default` ``.
        known: String,
    },
    /// A timeout flag is not a usable number of seconds.
    #[error("Failed to use `{value}` seconds as `{flag}`: expected a positive number")]
    Duration {
        /// e.g. `--timeout`.
        flag: &'static str,
        /// e.g. `-1`.
        value: f64,
    },
    /// `--package` names a package the lock does not install from an index.
    #[error(
        "Failed to record the sha256 of `{package}`: the lock of `{manifest}` for this node has no index package of that name"
    )]
    NotLocked {
        /// e.g. `torchaudo`.
        package: String,
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        manifest: String,
    },
    /// The index does not list the locked file (any more).
    #[error(
        "Failed to record the sha256 of `{filename}`: index `{index}` does not list it at `{url}`"
    )]
    NotListed {
        /// e.g. `torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        filename: String,
        /// e.g. `pytorch-cu130`.
        index: String,
        /// The project page, credentials removed.
        url: String,
    },
    /// A manifest package or a `--with` value could not be read as a requirement.
    #[error("Failed to read `{name}` as a requirement")]
    Requirement {
        /// e.g. `torch` or `nvidia-nccl-cu13==2.28.9`.
        name: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl IndexCommandError {
    /// Input problems exit 2; network and file problems exit 1.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            Self::NoPythonVersion
            | Self::PythonVersion { .. }
            | Self::Platform { .. }
            | Self::UnknownIndex { .. }
            | Self::Duration { .. }
            | Self::Requirement { .. }
            | Self::NotLocked { .. }
            | Self::PipConfig(_) => ExitStatus::InvalidInput,
            Self::NotListed { .. } => ExitStatus::Failure,
            Self::Client(ClientError::IndexUrl { .. }) => ExitStatus::InvalidInput,
            Self::Client(_) | Self::Snapshot { .. } | Self::Runtime(_) => ExitStatus::Failure,
        }
    }
}

/// Run `upgrade index …`.
pub fn run(command: IndexCommand, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    match command {
        IndexCommand::Snapshot(args) => snapshot(*args, printer),
        IndexCommand::DefaultUrl(args) => default_url(&args, printer),
        IndexCommand::Hash(args) => hash(&args, printer),
    }
}

/// One file whose digest was recorded, for the report.
#[derive(Debug, Serialize)]
struct HashedFile {
    package: String,
    version: String,
    index: String,
    filename: String,
    sha256: String,
    size: u64,
}

#[derive(Debug, Serialize)]
struct HashReport {
    file: String,
    recorded: Vec<HashedFile>,
    /// Named with `--package` but already with a sha256, e.g. `torch`.
    already_hashed: Vec<String>,
}

/// A locked index file without a sha256: package, version, index, file name.
type Unhashed = (String, String, String, String);

fn hash(args: &IndexHashArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let manifest = manifest::load_file(&args.manifest)?;
    let manifest_file = args.manifest.display().to_string();
    let runtime = runtime()?;
    let environment = match (&args.facts, args.node.local || args.node.host.is_some()) {
        (Some(path), _) => node::environment(&manifest, Some(path))?,
        (None, true) => {
            let selection = node::selection(&args.node, &args.ssh);
            let facts = runtime.block_on(async {
                let transport = exec::connect(&selection).await?;
                exec::gather_facts(&transport, &converge::probe_request(&manifest)).await
            })?;
            TargetEnvironment::from_node(&manifest, &facts)?
        }
        (None, false) => TargetEnvironment::from_manifest(&manifest)?,
    };
    let universe = converge::universe_for(&args.manifest, args.snapshot.as_deref())?;
    let rules = RuleSet::embedded()?;
    let locked =
        converge::resolve_lock(&manifest, &manifest_file, &environment, &universe, &rules)?;
    let hashes_path = RecordedHashes::path_for(&args.manifest);
    let mut recorded = RecordedHashes::read_optional(&hashes_path)?.unwrap_or(RecordedHashes {
        schema: HASHES_SCHEMA,
        files: Vec::new(),
    });

    let named: Vec<String> = args
        .packages
        .iter()
        .map(|name| {
            PackageName::from_str(name)
                .map(|name| name.to_string())
                .map_err(|source| IndexCommandError::Requirement {
                    name: name.clone(),
                    source: Box::new(source),
                })
        })
        .collect::<Result<_, _>>()?;
    for name in &named {
        let is_index_package = locked
            .package(name)
            .is_some_and(|package| matches!(package.source, LockedSource::Index { .. }));
        if !is_index_package {
            return Err(IndexCommandError::NotLocked {
                package: name.clone(),
                manifest: manifest_file.clone(),
            }
            .into());
        }
    }
    let mut wanted: Vec<Unhashed> = Vec::new();
    let mut already_hashed = Vec::new();
    for package in &locked.packages {
        let LockedSource::Index {
            index,
            file,
            sha256,
        } = &package.source
        else {
            continue;
        };
        if !named.is_empty() && !named.contains(&package.name) {
            continue;
        }
        if sha256.is_some() {
            if !named.is_empty() {
                already_hashed.push(package.name.clone());
            }
            continue;
        }
        wanted.push((
            package.name.clone(),
            package.version.clone(),
            index.clone(),
            file.clone(),
        ));
    }

    let client =
        IndexClient::new(client_settings(&args.network)?).map_err(IndexCommandError::from)?;
    let mut report = HashReport {
        file: hashes_path.display().to_string(),
        recorded: Vec::new(),
        already_hashed,
    };
    for (package, version, index, filename) in wanted {
        let url = match manifest.index(&index).and_then(|entry| entry.url.clone()) {
            Some(url) => url,
            None => {
                pip_config::default_index(args.python.as_os_str())
                    .map_err(IndexCommandError::from)?
                    .url
            }
        };
        let location = IndexLocation::new(&index, &url).map_err(IndexCommandError::from)?;
        let name =
            PackageName::from_str(&package).map_err(|source| IndexCommandError::Requirement {
                name: package.clone(),
                source: Box::new(source),
            })?;
        let digest = runtime.block_on(async {
            let files = client.fetch_project(&location, &name).await?;
            let file = files
                .into_iter()
                .flatten()
                .find(|listed| listed.filename == filename);
            match file {
                Some(file) => client.file_digest(&location, &file).await.map(Some),
                None => Ok(None),
            }
        });
        let Some(digest) = digest.map_err(IndexCommandError::from)? else {
            return Err(IndexCommandError::NotListed {
                filename,
                index,
                url: location
                    .project_url(&name)
                    .map(|url| redact(&url))
                    .unwrap_or_else(|_| redact(&location.url)),
            }
            .into());
        };
        recorded.record(RecordedHash {
            index: index.clone(),
            filename: filename.clone(),
            sha256: digest.sha256.clone(),
            size: Some(digest.size),
            recorded: today(),
            how: format!("upgrade index hash: downloaded from index `{index}`"),
        });
        // Written after every file, so a later failure keeps what was recorded.
        recorded.write(&hashes_path)?;
        report.recorded.push(HashedFile {
            package,
            version,
            index,
            filename,
            sha256: digest.sha256.to_string(),
            size: digest.size,
        });
    }

    let text = match args.format {
        IndexFormat::Json => json_line(&report)?,
        IndexFormat::Text => {
            let mut text = String::new();
            for file in &report.recorded {
                text.push_str(&format!(
                    "recorded `{}` (`{}=={}` from index `{}`, {} bytes): sha256 {}\n",
                    file.filename, file.package, file.version, file.index, file.size, file.sha256
                ));
            }
            for name in &report.already_hashed {
                text.push_str(&format!("`{name}`: its locked file already has a sha256\n"));
            }
            if report.recorded.is_empty() {
                text.push_str("nothing to record: every locked file asked for has a sha256\n");
            } else {
                text.push_str(&format!(
                    "wrote {} ({} file{} recorded); `lock`, `plan` and `apply` read it beside the manifest\n",
                    report.file,
                    report.recorded.len(),
                    if report.recorded.len() == 1 { "" } else { "s" }
                ));
            }
            text
        }
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

#[derive(Debug, Serialize)]
struct DefaultUrlReport {
    url: String,
    source: String,
}

fn default_url(
    args: &IndexDefaultUrlArgs,
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
    let found =
        pip_config::default_index(args.python.as_os_str()).map_err(IndexCommandError::from)?;
    let report = DefaultUrlReport {
        url: redact_text(&found.url),
        source: found.source.to_string(),
    };
    let text = match args.format {
        IndexFormat::Text => format!(
            "{}\n  from {}\n",
            crate::report::text_value(&report.url),
            report.source
        ),
        IndexFormat::Json => json_line(&report)?,
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

/// The settings of one `index snapshot` run, from flags and the manifest.
#[derive(Debug)]
struct SnapshotSettings {
    manifest_path: PathBuf,
    output: PathBuf,
    python_version: String,
    platform: Option<TargetPlatform>,
    platform_text: Option<String>,
    only_indexes: Option<Vec<String>>,
    with: Vec<Requirement>,
    transitive: bool,
    max_projects: usize,
    max_versions: usize,
    max_releases: usize,
    client: ClientSettings,
    python: PathBuf,
    format: IndexFormat,
}

impl SnapshotSettings {
    fn resolve(args: IndexSnapshotArgs, manifest: &Manifest) -> Result<Self, IndexCommandError> {
        let IndexSnapshotArgs {
            manifest: manifest_path,
            output,
            python_version,
            platform,
            only_index,
            with,
            no_deps,
            live: _,
            facts: _,
            max_projects,
            max_versions,
            max_releases,
            network,
            python,
            format,
        } = args;
        let python_version = python_version
            .or_else(|| manifest.target.python_version.clone())
            .ok_or(IndexCommandError::NoPythonVersion)?;
        let platform_text = platform.or_else(|| {
            manifest
                .target
                .glibc
                .as_ref()
                .map(|glibc| format!("manylinux_{}_x86_64", glibc.replace('.', "_")))
        });
        let platform =
            match &platform_text {
                Some(text) => Some(TargetPlatform::parse(text).ok_or_else(|| {
                    IndexCommandError::Platform {
                        value: text.clone(),
                    }
                })?),
                None => None,
            };
        for name in &only_index {
            if manifest.index(name).is_none() {
                return Err(IndexCommandError::UnknownIndex {
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
        let with = with
            .iter()
            .map(|text| {
                Requirement::from_str(text).map_err(|source| IndexCommandError::Requirement {
                    name: text.clone(),
                    source: Box::new(source),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            manifest_path,
            output,
            python_version,
            platform,
            platform_text,
            only_indexes: (!only_index.is_empty()).then_some(only_index),
            with,
            transitive: !no_deps,
            max_projects,
            max_versions,
            max_releases,
            client: client_settings(&network)?,
            python,
            format,
        })
    }
}

/// The index client's settings from the network flags.
pub(crate) fn client_settings(network: &NetworkArgs) -> Result<ClientSettings, IndexCommandError> {
    let NetworkArgs {
        cache_dir,
        no_cache,
        offline,
        connect_timeout,
        timeout,
        retries,
        concurrency,
    } = network;
    let (connect_timeout, timeout, retries, concurrency) =
        (*connect_timeout, *timeout, *retries, *concurrency);
    let seconds = |flag: &'static str, value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(Duration::from_secs_f64(value))
        } else {
            Err(IndexCommandError::Duration { flag, value })
        }
    };
    Ok(ClientSettings {
        connect_timeout: seconds("--connect-timeout", connect_timeout)?,
        timeout: seconds("--timeout", timeout)?,
        retries,
        concurrency,
        cache_dir: if *no_cache {
            None
        } else {
            cache_dir.clone().or_else(settings::default_cache_dir)
        },
        offline: *offline,
        ..ClientSettings::default()
    })
}

#[derive(Debug, Serialize)]
struct SnapshotReport {
    file: String,
    indexes: Vec<IndexReport>,
    projects_looked_up: usize,
    releases_fetched: usize,
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct IndexReport {
    name: String,
    url: Option<String>,
    packages: usize,
    releases: usize,
}

fn snapshot(args: IndexSnapshotArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    if args.live {
        return live_snapshot(args, printer);
    }
    let manifest = manifest::load_file(&args.manifest)?;
    let settings = SnapshotSettings::resolve(args, &manifest)?;
    let (sources, defaults) = index_sources(&manifest, &settings)?;
    let mut roots = root_requests(&manifest)?;
    roots.extend(settings.with.iter().map(|requirement| RootRequest {
        requirement: requirement.clone(),
        index: None,
    }));
    let full_version = full_python_version(&settings.python_version)?;
    let (overrides, constraints) = explore::manifest_requirements(&manifest);
    let explore_settings = ExploreSettings {
        markers: marker_environment(&full_version)?,
        python_version: full_version,
        platform: settings.platform.clone(),
        transitive: settings.transitive,
        max_projects: settings.max_projects,
        max_versions: settings.max_versions,
        max_releases: settings.max_releases,
        only_indexes: settings.only_indexes.clone(),
        overrides,
        constraints,
    };
    let client = IndexClient::new(settings.client.clone()).map_err(IndexCommandError::from)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(IndexCommandError::Runtime)?;
    let progress = Progress {
        printer: std::sync::Mutex::new(&mut *printer),
        projects: AtomicUsize::new(0),
        releases: AtomicUsize::new(0),
    };
    let exploration = runtime
        .block_on(explore(
            &client,
            &sources,
            &roots,
            &explore_settings,
            &progress,
        ))
        .map_err(IndexCommandError::from)?;

    let mut how = format!(
        "upgrade index snapshot {} --python-version {}",
        settings.manifest_path.display(),
        settings.python_version
    );
    if let Some(platform) = &settings.platform_text {
        how.push_str(&format!(" --platform {platform}"));
    }
    for name in settings.only_indexes.iter().flatten() {
        how.push_str(&format!(" --only-index {name}"));
    }
    for requirement in &settings.with {
        how.push_str(&format!(" --with '{requirement}'"));
    }
    if !settings.transitive {
        how.push_str(" --no-deps");
    }
    let snapshot = write_snapshot(how, exploration.universe, &settings.output)?;

    let report = SnapshotReport {
        file: settings.output.display().to_string(),
        indexes: index_reports(&snapshot, &sources, settings.only_indexes.as_ref()),
        projects_looked_up: exploration.projects,
        releases_fetched: exploration.releases,
        notes: exploration.notes,
    };
    let text = report_text(&report, settings.format, &defaults)?;
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

/// `index snapshot --live`: resolve the manifest live for the node and record the
/// releases the resolution visited.
fn live_snapshot(
    args: IndexSnapshotArgs,
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
    let manifest = manifest::load_file(&args.manifest)?;
    let file = args.manifest.display().to_string();
    let environment = node::environment(&manifest, args.facts.as_deref())?;
    let rules = RuleSet::embedded()?;
    let options = converge::LiveOptions {
        client: client_settings(&args.network)?,
        python: args.python.clone(),
        max_projects: args.max_projects,
        max_releases: args.max_releases,
    };
    let resolution =
        converge::resolve_live_universe(&manifest, &file, &environment, &rules, &options)?;
    let mut how = format!("upgrade index snapshot {file} --live");
    if let Some(facts) = &args.facts {
        how.push_str(&format!(" --facts {}", facts.display()));
    }
    // A manifest that cannot be resolved is recorded too: the snapshot replays the failure.
    let snapshot = write_snapshot(how, resolution.universe, &args.output)?;
    if let Some(failure) = resolution.failure {
        return Err(failure.into());
    }
    let report = SnapshotReport {
        file: args.output.display().to_string(),
        indexes: snapshot
            .universe
            .indexes
            .iter()
            .map(|contents| IndexReport {
                name: contents.name.clone(),
                url: match manifest.index(&contents.name).map(|index| &index.url) {
                    Some(Some(url)) => Some(redact_text(url)),
                    // Found again for the report; the resolution already used it.
                    Some(None) => pip_config::default_index(args.python.as_os_str())
                        .ok()
                        .map(|found| redact_text(&found.url)),
                    None => None,
                },
                packages: contents.packages.len(),
                releases: contents.packages.values().map(Vec::len).sum(),
            })
            .collect(),
        projects_looked_up: resolution.summary.projects,
        releases_fetched: resolution.summary.releases,
        notes: resolution.summary.notes,
    };
    let text = report_text(&report, args.format, &[])?;
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
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
                .then(|| redact(&source.location.url)),
            packages: contents.packages.len(),
            releases: contents.packages.values().map(Vec::len).sum(),
        })
        .collect()
}

/// The summary of a snapshot run as text or JSON.
fn report_text(
    report: &SnapshotReport,
    format: IndexFormat,
    defaults: &[(String, DefaultIndex)],
) -> Result<String, CommandError> {
    Ok(match format {
        IndexFormat::Json => json_line(report)?,
        IndexFormat::Text => {
            let mut text = String::new();
            for index in &report.indexes {
                let origin = defaults
                    .iter()
                    .find(|(name, _)| name == &index.name)
                    .map(|(_, found)| format!(" (pip's default index, from {})", found.source))
                    .unwrap_or_default();
                text.push_str(&format!(
                    "index `{}`{}: {} packages, {} releases{}\n",
                    index.name,
                    index
                        .url
                        .as_deref()
                        .map(|url| format!(" at {}", crate::report::text_value(url)))
                        .unwrap_or_else(|| " (not fetched)".to_string()),
                    index.packages,
                    index.releases,
                    origin,
                ));
            }
            for note in &report.notes {
                text.push_str(&format!("note: {}\n", crate::report::text_value(note)));
            }
            text.push_str(&format!(
                "wrote {} ({} projects looked up, {} releases fetched)\n",
                report.file, report.projects_looked_up, report.releases_fetched
            ));
            text
        }
    })
}

/// Progress on stderr: one line per [`PROGRESS_EVERY`] releases read.
struct Progress<'a> {
    printer: std::sync::Mutex<&'a mut Printer>,
    projects: AtomicUsize,
    releases: AtomicUsize,
}

/// How many releases between two progress lines, e.g. `250`.
const PROGRESS_EVERY: usize = 250;

impl Reporter for Progress<'_> {
    fn on_project(&self, _name: &PackageName, _index: Option<&str>) {
        self.projects.fetch_add(1, Ordering::Relaxed);
    }

    fn on_release(&self, _name: &PackageName, _version: &Version) {
        let releases = self.releases.fetch_add(1, Ordering::Relaxed) + 1;
        if releases.is_multiple_of(PROGRESS_EVERY)
            && let Ok(mut printer) = self.printer.lock()
        {
            let projects = self.projects.load(Ordering::Relaxed);
            // Progress is best effort: a closed stderr must not stop the recording.
            let _ = printer.err(&format!(
                "recording: {projects} projects looked up, {releases} releases read\n"
            ));
        }
    }
}

/// The manifest's indexes with their URLs; an index without `url` is pip's default,
/// looked up only when the run fetches from it (placeholder URL otherwise, never used).
#[expect(
    clippy::type_complexity,
    reason = "a private pair: the sources and which of them are pip's default"
)]
fn index_sources(
    manifest: &Manifest,
    settings: &SnapshotSettings,
) -> Result<(Vec<IndexSource>, Vec<(String, DefaultIndex)>), IndexCommandError> {
    let mut sources = Vec::new();
    let mut defaults = Vec::new();
    for index in &manifest.indexes {
        let used = settings
            .only_indexes
            .as_ref()
            .is_none_or(|only| only.contains(&index.name));
        let url = match (&index.url, used) {
            (Some(url), _) => url.clone(),
            (None, true) => {
                let found = pip_config::default_index(settings.python.as_os_str())?;
                let url = found.url.clone();
                defaults.push((index.name.clone(), found));
                url
            }
            // Never fetched from: any well-formed URL stands in.
            (None, false) => "http://127.0.0.1/unused/".to_string(),
        };
        sources.push(IndexSource {
            location: IndexLocation::new(&index.name, &url)?,
            explicit: index.explicit,
        });
    }
    Ok((sources, defaults))
}

/// The manifest's packages as root requests.
fn root_requests(manifest: &Manifest) -> Result<Vec<RootRequest>, IndexCommandError> {
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
        let requirement =
            Requirement::from_str(&text).map_err(|source| IndexCommandError::Requirement {
                name: package.name.to_string(),
                source: Box::new(source),
            })?;
        roots.push(RootRequest { requirement, index });
    }
    Ok(roots)
}

/// `3.12` → `3.12.0`; `3.12.4` stays.
fn full_python_version(text: &str) -> Result<Version, IndexCommandError> {
    let error = || IndexCommandError::PythonVersion {
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
fn marker_environment(version: &Version) -> Result<MarkerEnvironment, IndexCommandError> {
    let release = version.release();
    let full = version.to_string();
    let short = format!(
        "{}.{}",
        release.first().copied().unwrap_or(3),
        release.get(1).copied().unwrap_or(0)
    );
    MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
        implementation_name: "cpython",
        implementation_version: &full,
        os_name: "posix",
        platform_machine: "x86_64",
        platform_python_implementation: "CPython",
        platform_release: "",
        platform_system: "Linux",
        platform_version: "",
        python_full_version: &full,
        python_version: &short,
        sys_platform: "linux",
    })
    .map_err(|_| IndexCommandError::PythonVersion {
        value: full.clone(),
    })
}

fn json_line<T: Serialize>(value: &T) -> Result<String, CommandError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|error| CommandError::Output(std::io::Error::other(error)))?;
    text.push('\n');
    Ok(text)
}

/// Redact credentials from a URL given as text, e.g. a `PIP_INDEX_URL`, with the one
/// masker; text that is not a URL is not shown at all.
fn redact_text(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(_) => crate::manifest::redact_url(url),
        Err(_) => "(an unparseable URL)".to_string(),
    }
}

/// Today's date in UTC, e.g. `2026-12-02`.
/// Write a snapshot of `universe` recorded today by the command line `how` to `output`.
fn write_snapshot(
    how: String,
    universe: crate::index::Universe,
    output: &std::path::Path,
) -> Result<Snapshot, IndexCommandError> {
    let snapshot = Snapshot {
        schema: SNAPSHOT_SCHEMA,
        recorded: today(),
        how,
        universe,
    };
    snapshot
        .write(output)
        .map_err(|source| IndexCommandError::Snapshot {
            path: output.to_path_buf(),
            source,
        })?;
    Ok(snapshot)
}

fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() / 86_400);
    let (year, month, day) = crate::calendar::civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{year:04}-{month:02}-{day:02}")
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
