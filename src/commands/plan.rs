//! `upgrade plan MANIFEST (--local | --host H | --facts FILE) [--lock FILE] [-o PLAN]`:
//! what `apply` would do on the node, step by step with its commands; changes nothing.
//! With `--lock FILE` that lock is planned as it is (checked against the manifest's
//! digest and the node's facts) instead of resolving. With `-i INVENTORY`, one line a
//! node ([`super::fleet::plan`]). With
//! `--wheels DIR` the lock's wheels found there are ABI-checked before anything is
//! installed, and a missing symbol blocks the pip step.

use std::time::Instant;

use crate::abi::{self, Report};
use crate::cli::{PlanArgs, PlanFormat};
use crate::commands::node::{self, NodeChoice, hash_command};
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge::{self, PLAN_SCHEMA, SavedPlan};
use crate::exec;
use crate::facts::NodeFacts;
use crate::plan;
use crate::printer::Printer;
use crate::resolve::Lock;
use crate::steps::StepKind;
use crate::text::text_value;

/// Plan the node and print (and optionally save) the plan.
pub fn run(args: &PlanArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    if args.fleet.inventory.is_some() {
        return super::fleet::plan(args, printer);
    }
    let (prepared, unset) =
        converge::prepare_for_plan(&args.manifest, super::resolution(&args.resolution)?)?;
    let (node_name, facts) = match (&args.facts, args.node.local, &args.node.host) {
        (Some(path), _, _) => ("facts".to_string(), NodeFacts::read(path)?),
        (None, _, _) => {
            let selection = node::selection(&args.node, &args.ssh);
            runtime()?.block_on(async {
                let transport = exec::connect(&selection).await?;
                let facts = converge::facts_for_plan(&transport, &prepared).await?;
                Ok::<_, CommandError>((transport.name().to_string(), facts))
            })?
        }
    };
    let node_choice = match &args.facts {
        Some(path) => NodeChoice::Facts(path),
        None => NodeChoice::Probed(&args.node, &args.ssh),
    };
    let hash_command = hash_command(
        &args.manifest,
        node_choice,
        args.resolution.snapshot.as_deref(),
    );
    let converge::Planned {
        plan: mut node_plan,
        lock,
        origin,
    } = converge::lock_and_plan(
        &prepared,
        &node_name,
        &facts,
        &hash_command,
        &args.fetch.delivery()?,
    )
    .map_err(|error| CommandError::from(error).verbose(printer.verbose()))?;
    if let Some(note) = origin.note() {
        printer
            .err(&format!("{}\n", text_value(&note)))
            .map_err(CommandError::Output)?;
    }
    // What the controller's cache knows of source builds' requirements, shown with them.
    runtime()?.block_on(exec::build_requirements::note_known(
        &mut node_plan.steps,
        &crate::settings::default_downloads_dir(),
    ));
    for variable in &unset {
        node_plan.warnings.push(format!(
            "`{variable}` is not set on this controller: the plan cannot compare the secret it supplies with the node's; `apply` needs it"
        ));
    }
    let wheel_check = match args.wheels.as_slice() {
        [] => None,
        directories => Some(check_wheels(&lock, directories)?),
    };
    if let Some(check) = &wheel_check
        && check.at_hand.found.is_empty()
    {
        node_plan.block(
            StepKind::PipPins,
            format!(
                "none of the lock's {} wheels is in {}: nothing was ABI-checked",
                check.at_hand.wanted(),
                text_value(&check.directories.join(", "))
            ),
        );
    } else if let Some(check) = &wheel_check
        && !check.report.ok
    {
        node_plan.block(
            StepKind::PipPins,
            format!(
                "the locked wheels fail the ABI check: {} missing symbol{} (report below)",
                check.report.missing.len(),
                if check.report.missing.len() == 1 {
                    ""
                } else {
                    "s"
                }
            ),
        );
    }
    if let Some(path) = &args.output {
        let saved = SavedPlan {
            schema: PLAN_SCHEMA,
            manifest_path: prepared.path.clone(),
            manifest_sha256: prepared.sha256.to_string(),
            node: node_name.clone(),
            facts_digest: facts.digest()?.to_string(),
            lock,
            plan: plan::json(&node_plan),
        };
        let mut text = serde_json::to_string_pretty(&saved)
            .map_err(|error| CommandError::Output(error.into()))?;
        text.push('\n');
        crate::local_file::write_atomic(path, text.as_bytes()).map_err(CommandError::Output)?;
    }
    let text = match args.format {
        PlanFormat::Text => {
            let mut text = plan::text(&node_plan, printer.verbose());
            if let Some(check) = &wheel_check {
                text.push_str(&check.text());
            }
            text
        }
        PlanFormat::Json => {
            let mut value = plan::json(&node_plan);
            if let (Some(check), Some(object)) = (&wheel_check, value.as_object_mut()) {
                object.insert("abi_check".to_string(), check.json());
            }
            let mut text = serde_json::to_string_pretty(&value)
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(exit_status(&node_plan, args.detailed_exitcode))
}

/// A blocked step fails the plan (`apply` would refuse the node); with
/// `--detailed-exitcode`, changes exit 2 and nothing to do exits 0.
fn exit_status(plan: &plan::NodePlan, detailed: bool) -> ExitStatus {
    if !plan.blocked().is_empty() {
        ExitStatus::Failure
    } else if detailed && !plan.is_converged() {
        ExitStatus::Changes
    } else {
        ExitStatus::Success
    }
}

/// The ABI check of the lock's wheels found in `--wheels` directories.
struct WheelCheck {
    /// Where they were looked for.
    directories: Vec<String>,
    /// Which were found.
    at_hand: abi::locked::AtHand,
    /// The check of those found.
    report: Report,
}

impl WheelCheck {
    fn text(&self) -> String {
        let label = self.directories.join(", ");
        let mut out = format!(
            "\nabi-check of the locked wheels before install: {} of {} found in {}\n",
            self.at_hand.found.len(),
            self.at_hand.wanted(),
            text_value(&label)
        );
        if !self.at_hand.absent.is_empty() {
            out.push_str(&format!(
                "  not checked (not in those directories): {}\n",
                text_value(&self.at_hand.absent.join(", "))
            ));
        }
        if self.at_hand.found.is_empty() {
            out.push_str("wheels: abi-check NOT RUN: none of the locked wheels was found\n");
        } else {
            out.push_str(&self.report.text("wheels"));
        }
        out
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "directories": self.directories,
            "wheels_found": self.at_hand.found.len(),
            "wheels_locked": self.at_hand.wanted(),
            "not_checked": self.at_hand.absent,
            "checked": !self.at_hand.found.is_empty(),
            "report": self.report,
        })
    }
}

fn check_wheels(
    lock: &Lock,
    directories: &[std::path::PathBuf],
) -> Result<WheelCheck, CommandError> {
    let started = Instant::now();
    let at_hand = abi::locked::find(lock, directories)?;
    let label = directories
        .first()
        .map(std::path::PathBuf::as_path)
        .unwrap_or(std::path::Path::new("."));
    let environment = abi::locked::environment(&at_hand, label)?;
    let outcome = abi::check(&environment);
    let report = Report::new(&environment, &outcome, started.elapsed().as_secs_f64());
    Ok(WheelCheck {
        directories: directories
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
        at_hand,
        report,
    })
}
