//! `upgrade plan MANIFEST (--local | --host H | --facts FILE) [-o PLAN]`: what `apply`
//! would do on the node, step by step with its commands; changes nothing.

use crate::cli::{PlanArgs, PlanFormat};
use crate::commands::node::{self, NodeChoice, hash_command};
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge::{self, PLAN_SCHEMA, SavedPlan};
use crate::exec;
use crate::facts::NodeFacts;
use crate::plan;
use crate::printer::Printer;

/// Plan the node and print (and optionally save) the plan.
pub fn run(args: &PlanArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let prepared = converge::prepare(&args.manifest)?;
    let (node_name, facts) = match (&args.facts, args.node.local, &args.node.host) {
        (Some(path), _, _) => ("facts".to_string(), NodeFacts::read(path)?),
        (None, _, _) => {
            let selection = node::selection(&args.node, &args.ssh);
            runtime()?.block_on(async {
                let transport = exec::connect(&selection).await?;
                let facts = converge::facts(&transport, &prepared).await?;
                Ok::<_, CommandError>((transport.name().to_string(), facts))
            })?
        }
    };
    let lock = converge::lock(&prepared, &facts, args.snapshot.as_deref())?;
    let urls = converge::index_urls(&prepared.manifest)?;
    let node_choice = match &args.facts {
        Some(path) => NodeChoice::Facts(path),
        None => NodeChoice::Probed(&args.node, &args.ssh),
    };
    let hash_command = hash_command(&args.manifest, node_choice, args.snapshot.as_deref());
    let node_plan = converge::plan_for(&prepared, &node_name, &facts, &lock, &urls, &hash_command)?;
    if let Some(path) = &args.output {
        let saved = SavedPlan {
            schema: PLAN_SCHEMA,
            manifest_path: prepared.path.clone(),
            manifest_sha256: prepared.sha256.clone(),
            node: node_name.clone(),
            facts_digest: facts.digest()?.to_string(),
            lock,
            plan: plan::json(&node_plan),
        };
        let mut text = serde_json::to_string_pretty(&saved)
            .map_err(|error| CommandError::Output(error.into()))?;
        text.push('\n');
        let temporary = path.with_extension("tmp");
        fs_err::write(&temporary, text).map_err(CommandError::Output)?;
        fs_err::rename(&temporary, path).map_err(CommandError::Output)?;
    }
    let text = match args.format {
        PlanFormat::Text => plan::text(&node_plan),
        PlanFormat::Json => {
            let mut text = serde_json::to_string_pretty(&plan::json(&node_plan))
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}
