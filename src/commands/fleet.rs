//! `upgrade apply MANIFEST -i INVENTORY`: converge an inventory's nodes (the work is
//! [`crate::fleet::converge_fleet`]); this file reads the inventory, shows progress (one
//! line a node on a terminal, plain lines otherwise), writes each node's log and the
//! run's summary into the run directory, and prints the summary table or JSON.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cli::{ApplyArgs, ApplyFormat, FleetArgs, SshArgs};
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge::{self, ApplyOptions, Prepared};
use crate::exec::ApplyContext;
use crate::exec::node_lock::LockHolder;
use crate::fleet::{self, FleetNode, FleetOptions, FleetProgress, FleetTarget};
use crate::inventory::{self, InventoryHost};
use crate::printer::Printer;
use crate::report::{self, text_value};
use crate::transport::{HostKeyPolicy, SshOptions, SshTransport, Transport, TransportError};

/// The inventory's selected hosts and the SSH options that reach them (a run's own
/// `ssh_config` when hosts carry connection settings).
pub struct Selected {
    /// The hosts, in inventory order.
    pub hosts: Vec<InventoryHost>,
    /// How to reach them.
    pub ssh: SshOptions,
}

/// Read the inventory, apply `--limit`, and write the run's `ssh_config` into `run_dir`.
pub fn select(fleet: &FleetArgs, ssh: &SshArgs, run_dir: &Path) -> Result<Selected, CommandError> {
    let path = fleet
        .inventory
        .as_deref()
        .ok_or_else(|| CommandError::Output(std::io::Error::other("no inventory given")))?;
    let inventory = inventory::load(path)?;
    let hosts = inventory::select(&inventory, fleet.limit.as_deref())?;
    let config = inventory::write_ssh_config(run_dir, &hosts, ssh.ssh_config.as_deref()).map_err(
        |error| CommandError::Output(std::io::Error::other(report::error_chain(&error))),
    )?;
    Ok(Selected {
        hosts: hosts.into_iter().cloned().collect(),
        ssh: SshOptions {
            config_file: config.or_else(|| ssh.ssh_config.clone()),
            known_hosts_file: ssh.known_hosts.clone(),
            host_keys: if ssh.accept_new_host_keys {
                HostKeyPolicy::AcceptNew
            } else {
                HostKeyPolicy::Strict
            },
            connect_timeout: None,
            command_timeout: ssh.command_timeout,
        },
    })
}

/// Run `work` on every selected host, at most `parallel` at once, each with its own SSH
/// connection (or the reason it could not be made); results in inventory order.
pub async fn each_host<'a, T, F, Fut>(selected: &'a Selected, parallel: usize, work: F) -> Vec<T>
where
    F: Fn(&'a InventoryHost, Result<Transport, TransportError>) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let slots = tokio::sync::Semaphore::new(parallel.max(1));
    futures_util::future::join_all(selected.hosts.iter().map(|host| {
        let (slots, work) = (&slots, &work);
        async move {
            let _slot = slots.acquire().await.ok();
            let transport = SshTransport::connect(&host.name, &selected.ssh)
                .await
                .map(Transport::Ssh);
            work(host, transport).await
        }
    }))
    .await
}

/// The run directory: `--run-dir`, else the default runs directory's `RUN`.
pub fn run_dir(explicit: Option<&Path>, run: &str) -> PathBuf {
    explicit.map(Path::to_path_buf).unwrap_or_else(|| {
        crate::settings::default_runs_dir()
            .unwrap_or_else(|| PathBuf::from(".cuda-upgrade/runs"))
            .join(run)
    })
}

/// Converge the inventory's nodes.
pub fn run(args: &ApplyArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let base: Prepared = converge::load(&args.target)?;
    let holder = LockHolder::this_process(
        crate::settings::controller_host().unwrap_or_else(|| "unknown".to_string()),
        crate::settings::controller_user(),
    );
    let run = format!("{}-{}", holder.started, holder.pid);
    let run_dir = run_dir(args.run_dir.as_deref(), &run);
    let selected = select(&args.fleet, &args.ssh, &run_dir)?;
    let targets: Vec<FleetTarget> = selected
        .hosts
        .iter()
        .map(|host| FleetTarget {
            name: host.name.clone(),
            python: host.python.clone(),
            vars: host.vars.clone(),
        })
        .collect();
    super::node::confirm_fleet(
        args.yes,
        &args.target,
        targets.iter().map(|t| t.name.as_str()),
    )?;
    // Every host's secret values are masked in every output.
    let mut secrets: Vec<String> = Vec::new();
    for target in &targets {
        if let Ok(prepared) = base.for_host(target.python.as_deref(), &target.vars) {
            secrets.extend(
                prepared
                    .env
                    .into_iter()
                    .filter(|var| var.secret)
                    .map(|var| var.value),
            );
        }
    }
    secrets.sort();
    secrets.dedup();
    let context = ApplyContext {
        cache_dir: crate::settings::default_cache_dir()
            .unwrap_or_else(|| PathBuf::from(".cache/cuda-upgrade"))
            .join("downloads"),
        before_images: Some(PathBuf::from(crate::transport::BEFORE_IMAGES_DIR)),
        secrets,
    };
    let hash_command = format!(
        "upgrade index hash {} --host NODE",
        crate::shell::quote(&args.target.display().to_string())
    );
    let live = super::live_options(&args.live)?;
    let options = FleetOptions {
        parallel: args.fleet.parallel,
        max_fail: args.max_fail,
        batch: args.batch,
        ssh: selected.ssh,
        apply: ApplyOptions {
            saved: None,
            plan_path: &args.target,
            snapshot: args.snapshot.as_deref(),
            live: live.as_ref(),
            hash_command: &hash_command,
            verify: !args.no_verify,
            context: &context,
            holder,
            break_lock: args.break_lock,
            fetch: args.fetch,
            confirm: None,
            drain: None,
            rollback_on_failure: args.rollout.rollback_on_failure,
        },
        drain: args.rollout.drain_settings(),
    };
    let display = FleetDisplay::new(
        &run_dir,
        std::io::stderr().is_terminal() && args.format == ApplyFormat::Text,
    )?;
    let outcome = runtime()?.block_on(fleet::converge_fleet(&targets, &base, &options, &display));
    display.close();
    let mut json = serde_json::to_string_pretty(&serde_json::json!({
        "run": outcome.run,
        "ok": outcome.ok,
        "seconds": outcome.seconds,
        "run_dir": run_dir,
        "nodes": outcome.nodes,
    }))
    .map_err(|error| CommandError::Output(error.into()))?;
    json.push('\n');
    fs_err::write(run_dir.join("summary.json"), &json).map_err(CommandError::Output)?;
    match args.format {
        ApplyFormat::Json => printer.out(&json).map_err(CommandError::Output)?,
        ApplyFormat::Text => printer
            .out(&report::fleet::summary(&outcome, &run_dir))
            .map_err(CommandError::Output)?,
    }
    Ok(if outcome.ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// A fleet's progress on stderr and in per-node logs.
struct FleetDisplay {
    started: Instant,
    dir: PathBuf,
    /// On a terminal: one line a node, redrawn.
    bars: Option<(
        indicatif::MultiProgress,
        Mutex<HashMap<String, indicatif::ProgressBar>>,
    )>,
    logs: Mutex<HashMap<String, fs_err::File>>,
}

impl FleetDisplay {
    fn new(dir: &Path, terminal: bool) -> Result<Self, CommandError> {
        fs_err::create_dir_all(dir).map_err(CommandError::Output)?;
        Ok(Self {
            started: Instant::now(),
            dir: dir.to_path_buf(),
            bars: terminal.then(|| (indicatif::MultiProgress::new(), Mutex::new(HashMap::new()))),
            logs: Mutex::new(HashMap::new()),
        })
    }

    /// Append a line to `host`'s log (`DIR/HOST.log`); a log that cannot be written is
    /// skipped (the summary still says how the node ended).
    fn log(&self, host: &str, line: &str) {
        let Ok(mut logs) = self.logs.lock() else {
            return;
        };
        if !logs.contains_key(host) {
            let path = self.dir.join(format!("{host}.log"));
            if let Ok(file) = fs_err::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                logs.insert(host.to_string(), file);
            }
        }
        if let Some(file) = logs.get_mut(host) {
            let _ = writeln!(
                file,
                "[{:>7.1}s] {line}",
                self.started.elapsed().as_secs_f64()
            );
        }
    }

    fn bar(&self, host: &str) -> Option<indicatif::ProgressBar> {
        let (multi, bars) = self.bars.as_ref()?;
        let mut bars = bars.lock().ok()?;
        Some(
            bars.entry(host.to_string())
                .or_insert_with(|| {
                    let bar = multi.add(indicatif::ProgressBar::new_spinner());
                    if let Ok(style) = indicatif::ProgressStyle::with_template(
                        "{spinner} {prefix} {elapsed:>4} {wide_msg}",
                    ) {
                        bar.set_style(style);
                    }
                    bar.set_prefix(text_value(host));
                    bar.enable_steady_tick(Duration::from_millis(200));
                    bar
                })
                .clone(),
        )
    }

    fn close(&self) {
        if let Some((multi, _)) = &self.bars {
            let _ = multi.clear();
        }
    }
}

impl FleetProgress for FleetDisplay {
    fn step(&self, host: &str, what: &str) {
        self.log(host, what);
        match self.bar(host) {
            Some(bar) => bar.set_message(text_value(what)),
            None => eprintln!(
                "[{:>7.1}s] {}: {}",
                self.started.elapsed().as_secs_f64(),
                text_value(host),
                text_value(what)
            ),
        }
    }

    fn finished(&self, node: &FleetNode) {
        let line = report::fleet::node_line(node);
        self.log(&node.host, &line);
        for step in &node.steps {
            self.log(
                &node.host,
                &format!(
                    "  {} {}: {}",
                    step.outcome,
                    step.kind,
                    text_value(&step.reason)
                ),
            );
        }
        if let Some(detail) = &node.detail {
            for detail_line in detail.lines() {
                self.log(&node.host, &format!("  | {}", text_value(detail_line)));
            }
        }
        match self.bar(&node.host) {
            Some(bar) => bar.finish_with_message(line),
            None => eprintln!(
                "[{:>7.1}s] {}: {line}",
                self.started.elapsed().as_secs_f64(),
                text_value(&node.host)
            ),
        }
    }
}
