//! The inventory verbs: `apply -i` (the work is [`crate::fleet::converge_fleet`]),
//! `plan -i` ([`crate::fleet::plan::plan_fleet`]) and `--list-hosts` on every verb that
//! takes `-i`. This file reads the flags, asks what only a terminal can answer, writes
//! the run's summary into the run directory, and prints the summary table or JSON.

mod display;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::cli::{ApplyArgs, ApplyFormat, FleetArgs, PlanArgs, PlanFormat, SshArgs};
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge::{self, Prepared};
use crate::exec::ApplyContext;
use crate::exec::node_lock::LockHolder;
use crate::fleet::plan::{PlanOptions, PlanState};
use crate::fleet::{
    self, AfterCanary, BatchList, CanaryEnd, FleetOptions, FleetTarget, SelectError, Selected,
};
use crate::inventory::InventoryHost;
use crate::printer::Printer;
use crate::report;

use display::FleetDisplay;

/// Read the inventory, apply `--limit`, and write the run's `ssh_config` into `run_dir`.
pub fn select(fleet: &FleetArgs, ssh: &SshArgs, run_dir: &Path) -> Result<Selected, CommandError> {
    let path = inventory_path(fleet)?;
    fleet::select(
        path,
        fleet.limit.as_deref(),
        super::node::ssh_options(ssh),
        run_dir,
    )
    .map_err(|error| match error {
        SelectError::Inventory(error) => CommandError::Inventory(error),
        SelectError::SshConfig(error) => {
            CommandError::Output(std::io::Error::other(report::error_chain(&error)))
        }
    })
}

fn inventory_path(fleet: &FleetArgs) -> Result<&Path, CommandError> {
    fleet
        .inventory
        .as_deref()
        .ok_or_else(|| CommandError::Output(std::io::Error::other("no inventory given")))
}

/// `--list-hosts`: the selected hosts in order (with their batch under `batch`), as text
/// or JSON; nothing is connected to.
pub fn list_hosts(
    fleet: &FleetArgs,
    batch: Option<&BatchList>,
    json: bool,
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
    let hosts = fleet::hosts(inventory_path(fleet)?, fleet.limit.as_deref())?;
    let listed = fleet::list(&hosts, batch);
    let text = if json {
        json_text(&serde_json::json!({ "hosts": listed }))?
    } else {
        report::fleet::host_list(&listed)
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

/// Pretty JSON with a final newline.
fn json_text(value: &serde_json::Value) -> Result<String, CommandError> {
    let mut text =
        serde_json::to_string_pretty(value).map_err(|error| CommandError::Output(error.into()))?;
    text.push('\n');
    Ok(text)
}

fn targets(hosts: &[InventoryHost]) -> Vec<FleetTarget> {
    hosts
        .iter()
        .map(|host| FleetTarget {
            name: host.name.clone(),
            python: host.python.clone(),
            vars: host.vars.clone(),
        })
        .collect()
}

/// `plan MANIFEST -i INVENTORY`: every selected node planned at once, one line a node.
pub fn plan(args: &PlanArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    if args.fleet.list_hosts {
        return list_hosts(&args.fleet, None, args.format == PlanFormat::Json, printer);
    }
    let base: Prepared = converge::load(&args.manifest, super::resolution(&args.resolution)?)?;
    let run_dir = fleet::run_dir(None, &format!("plan-{}", std::process::id()));
    let selected = select(&args.fleet, &args.ssh, &run_dir)?;
    let hash_command = format!(
        "upgrade index hash {} --host NODE",
        crate::shell::quote(&args.manifest.display().to_string())
    );
    let options = PlanOptions {
        ssh: selected.ssh,
        parallel: args.fleet.parallel,
        hash_command: &hash_command,
        delivery: args.fetch.delivery()?,
    };
    let targets = targets(&selected.hosts);
    let outcome = runtime()?.block_on(fleet::plan::plan_fleet(&targets, &base, &options))?;
    let text = match args.format {
        PlanFormat::Json => json_text(&serde_json::json!({
            "ok": outcome.worst() <= PlanState::Changes,
            "seconds": outcome.seconds,
            "nodes": outcome.nodes,
        }))?,
        PlanFormat::Text => report::fleet::plan_summary(&outcome),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(match outcome.worst() {
        PlanState::Converged => ExitStatus::Success,
        PlanState::Changes if args.detailed_exitcode => ExitStatus::Changes,
        PlanState::Changes => ExitStatus::Success,
        PlanState::Blocked | PlanState::Unreachable | PlanState::Error => ExitStatus::Failure,
    })
}

/// `apply MANIFEST -i INVENTORY`: converge the inventory's nodes.
pub fn run(args: &ApplyArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    if args.fleet.list_hosts {
        let json = args.format == ApplyFormat::Json;
        return list_hosts(&args.fleet, args.batch.as_ref(), json, printer);
    }
    let base: Prepared = converge::load(&args.target, super::resolution(&args.resolution)?)?;
    let holder = LockHolder::this_process(
        crate::settings::controller_host().unwrap_or_else(|| "unknown".to_string()),
        crate::settings::controller_user(),
    );
    let run = format!("{}-{}", holder.started, holder.pid);
    let run_dir = fleet::run_dir(args.run_dir.as_deref(), &run);
    let selected = select(&args.fleet, &args.ssh, &run_dir)?;
    let targets = targets(&selected.hosts);
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
        cache_dir: crate::settings::default_downloads_dir(),
        before_images: Some(PathBuf::from(crate::transport::BEFORE_IMAGES_DIR)),
        secrets,
    };
    let hash_command = format!(
        "upgrade index hash {} --host NODE",
        crate::shell::quote(&args.target.display().to_string())
    );
    let display = FleetDisplay::new(
        &run_dir,
        std::io::stderr().is_terminal() && args.format == ApplyFormat::Text,
        printer.quiet(),
    )?;
    let ask = |end: &CanaryEnd| {
        display.suspend(|| super::node::confirm("", &report::fleet::canary_question(end)))
    };
    let options = FleetOptions {
        parallel: args.fleet.parallel,
        max_fail: args.max_fail,
        unreachable_fails: args.unreachable_fails,
        batch: args.batch.clone(),
        after_canary: match (args.pause_after_canary, std::io::stdin().is_terminal()) {
            (false, _) => AfterCanary::Continue,
            (true, true) => AfterCanary::Ask(&ask),
            (true, false) => AfterCanary::Stop,
        },
        ssh: selected.ssh,
        apply: super::apply_options(args, &hash_command, &context, holder)?,
        drain: args.rollout.drain_settings(),
    };
    let outcome = runtime()?.block_on(fleet::converge_fleet(&targets, &base, &options, &display));
    display.close();
    let json = json_text(&serde_json::json!({
        "run": outcome.run,
        "ok": outcome.ok,
        "seconds": outcome.seconds,
        "run_dir": run_dir,
        "batches": outcome.batches,
        "stopped": outcome.stopped,
        "nodes": outcome.nodes,
    }))?;
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
