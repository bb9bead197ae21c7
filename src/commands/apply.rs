//! `upgrade apply MANIFEST|PLAN (--local | --host H)`: converge one node, then run the
//! verification launch (the pipeline is [`crate::converge::converge_node`]).
//!
//! Facts are gathered once; a no-op step costs no round trip. Each step with work is
//! re-checked against fresh facts immediately before it runs (someone may have fixed
//! it meanwhile), and the first failing step stops the node with its command, exit
//! status and output tail. A saved plan is refused when the node's facts or the
//! manifest changed since it was made; `--lock FILE` installs that lock as it is,
//! refused when it was made from another manifest or does not hold on the node.

use std::path::{Path, PathBuf};

use crate::cli::{ApplyArgs, ApplyFormat};
use crate::commands::node::{self, NodeChoice, hash_command};
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge::{self, ApplyOptions, ConvergeError, Saved, SavedPlan};
use crate::exec::node_lock::LockHolder;
use crate::exec::{self, ApplyContext};
use crate::printer::Printer;
use crate::report;

/// A saved plan (JSON) when the file is one; `None` for a manifest.
fn read_saved_plan(path: &Path) -> Result<Option<SavedPlan>, CommandError> {
    let Ok(text) = fs_err::read_to_string(path) else {
        // Not readable here: the manifest loader reports it with its own error.
        return Ok(None);
    };
    if !text.trim_start().starts_with('{') {
        return Ok(None);
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| CommandError::PlanFile {
            path: path.to_path_buf(),
            message: source.to_string(),
        })
}

/// Converge the node.
pub fn run(args: &ApplyArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    if args.fleet.inventory.is_some() {
        return super::fleet::run(args, printer);
    }
    let asks = node::asks(args.yes)?;
    let saved = read_saved_plan(&args.target)?;
    let manifest_path: PathBuf = saved
        .as_ref()
        .map_or_else(|| args.target.clone(), |s| s.manifest_path.clone());
    if saved.is_some() && args.resolution.lock.is_some() {
        return Err(CommandError::PlanFile {
            path: args.target.clone(),
            message: "a saved plan carries its own lock; `--lock` goes with a manifest".to_string(),
        });
    }
    let prepared = converge::prepare(&manifest_path, super::resolution(&args.resolution)?)?;
    if let Some(saved) = &saved
        && prepared.sha256 != saved.manifest_sha256
    {
        return Err(ConvergeError::StalePlan {
            path: args.target.clone(),
            reason: format!(
                "`{}` changed since the plan was made",
                manifest_path.display()
            ),
        }
        .into());
    }
    let selection = node::selection(&args.node, &args.ssh);
    let context = ApplyContext {
        cache_dir: crate::settings::default_downloads_dir(),
        before_images: Some(PathBuf::from(crate::transport::BEFORE_IMAGES_DIR)),
        secrets: prepared
            .env
            .iter()
            .filter(|var| var.secret)
            .map(|var| var.value.clone())
            .collect(),
    };
    let hash_command = hash_command(
        &prepared.path,
        NodeChoice::Probed(&args.node, &args.ssh),
        args.resolution.snapshot.as_deref(),
    );
    let confirm = |plan: &crate::plan::NodePlan| {
        node::confirm(
            &crate::plan::text(plan, false),
            &format!(
                "Apply this plan to `{}`?",
                crate::text::text_value(&plan.node)
            ),
        )
    };
    let holder = LockHolder::this_process(
        crate::settings::controller_host().unwrap_or_else(|| "unknown".to_string()),
        crate::settings::controller_user(),
    );
    let host = match &args.node.host {
        Some(host) => host.clone(),
        None => crate::settings::controller_host().unwrap_or_else(|| "localhost".to_string()),
    };
    let drain = crate::fleet::drain::for_host(
        &host,
        &std::collections::BTreeMap::new(),
        &args.rollout.drain_settings(),
        &format!("{}-{}", holder.started, holder.pid),
    )?;
    let options = ApplyOptions {
        saved: saved.as_ref().map(Saved::Plan),
        confirm: if asks { Some(&confirm) } else { None },
        drain: drain.as_deref(),
        ..super::apply_options(args, &hash_command, &context, holder)?
    };
    let outcome = runtime()?.block_on(async {
        let transport = exec::connect(&selection).await?;
        Ok::<_, CommandError>(
            converge::converge_node(&transport, &prepared, &options, printer.reporter()).await?,
        )
    })?;
    match args.format {
        ApplyFormat::Json => {
            let mut text = serde_json::to_string_pretty(&outcome)
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            printer.out(&text).map_err(CommandError::Output)?;
        }
        ApplyFormat::Text => printer
            .out(&report::apply::node(&outcome))
            .map_err(CommandError::Output)?,
    }
    Ok(if outcome.ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
