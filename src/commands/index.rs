//! `upgrade index snapshot MANIFEST -o FILE`, `upgrade index hash MANIFEST` and
//! `upgrade index default-url`: the flags turned into a request of
//! `converge::record` (or pip's configuration asked), the report printed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pep440_rs::Version;
use pep508_rs::PackageName;
use serde::Serialize;

use crate::cli::{
    IndexCommand, IndexDefaultUrlArgs, IndexFormat, IndexHashArgs, IndexSnapshotArgs, NetworkArgs,
};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::converge;
use crate::converge::record::{
    self, HashRequest, LiveSnapshotRequest, RecordError, SnapshotRequest,
};
use crate::exec;
use crate::index::client::{ClientSettings, Reporter};
use crate::index::pip_config;
use crate::manifest;
use crate::printer::Printer;
use crate::resolve::TargetEnvironment;
use crate::settings;

/// Run `upgrade index …`.
pub fn run(command: IndexCommand, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    match command {
        IndexCommand::Snapshot(args) => snapshot(*args, printer),
        IndexCommand::DefaultUrl(args) => default_url(&args, printer),
        IndexCommand::Hash(args) => hash(&args, printer),
    }
}

impl From<RecordError> for CommandError {
    fn from(error: RecordError) -> Self {
        match error {
            RecordError::Converge(error) => error.into(),
            RecordError::Hashes(error) => Self::Hashes(error),
            other => Self::Index(Box::new(other)),
        }
    }
}

fn hash(args: &IndexHashArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let manifest = manifest::load_file(&args.manifest)?;
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
    let report = runtime.block_on(record::record_hashes(HashRequest {
        manifest: &manifest,
        manifest_path: &args.manifest,
        environment: &environment,
        snapshot: args.snapshot.as_deref(),
        packages: &args.packages,
        client: client_settings(&args.network)?,
        python: &args.pip.python,
    }))?;
    let text = match args.format {
        IndexFormat::Json => json_line(&report)?,
        IndexFormat::Text => report.text(),
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
    let found = pip_config::default_index(args.pip.python.as_os_str())?;
    let report = DefaultUrlReport {
        url: record::redact_text(&found.url),
        source: found.source.to_string(),
    };
    let text = match args.format {
        IndexFormat::Text => format!(
            "{}\n  from {}\n",
            crate::text::text_value(&report.url),
            report.source
        ),
        IndexFormat::Json => json_line(&report)?,
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

fn snapshot(args: IndexSnapshotArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let manifest = manifest::load_file(&args.manifest)?;
    let client = client_settings(&args.network)?;
    let report = if args.live {
        let environment = node::environment(&manifest, args.facts.as_deref())?;
        let options = converge::LiveOptions {
            client,
            python: args.pip.python.clone(),
            max_projects: args.max_projects,
            max_releases: args.max_releases,
        };
        record::record_live_snapshot(LiveSnapshotRequest {
            manifest: &manifest,
            manifest_path: &args.manifest,
            environment: &environment,
            facts: args.facts.as_deref(),
            options: &options,
            output: &args.output,
        })?
    } else {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(RecordError::Runtime)?;
        let progress = Progress {
            printer: std::sync::Mutex::new(&mut *printer),
            projects: AtomicUsize::new(0),
            releases: AtomicUsize::new(0),
        };
        let request = SnapshotRequest {
            manifest: &manifest,
            manifest_path: &args.manifest,
            output: &args.output,
            python_version: args.python_version,
            platform: args.platform,
            only_index: args.only_index,
            with: args.with,
            transitive: !args.no_deps,
            max_projects: args.max_projects,
            max_versions: args.max_versions,
            max_releases: args.max_releases,
            client,
            python: args.pip.python,
        };
        runtime.block_on(record::record_snapshot(request, &progress))?
    };
    let text = match args.format {
        IndexFormat::Json => json_line(&report)?,
        IndexFormat::Text => report.text(),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
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

/// The index client's settings from the network flags.
pub(crate) fn client_settings(network: &NetworkArgs) -> Result<ClientSettings, RecordError> {
    let NetworkArgs {
        cache_dir,
        no_cache,
        offline,
        connect_timeout,
        timeout,
        retries,
        concurrency,
    } = network;
    let seconds = |flag: &'static str, value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(Duration::from_secs_f64(value))
        } else {
            Err(RecordError::Duration { flag, value })
        }
    };
    Ok(ClientSettings {
        connect_timeout: seconds("--connect-timeout", *connect_timeout)?,
        timeout: seconds("--timeout", *timeout)?,
        retries: *retries,
        concurrency: *concurrency,
        cache_dir: if *no_cache {
            None
        } else {
            cache_dir.clone().or_else(settings::default_cache_dir)
        },
        offline: *offline,
        ..ClientSettings::default()
    })
}

fn json_line<T: Serialize>(value: &T) -> Result<String, CommandError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|error| CommandError::Output(std::io::Error::other(error)))?;
    text.push('\n');
    Ok(text)
}
