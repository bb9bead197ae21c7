//! The one place flags and environment variables become a run's settings: the
//! resolution settings of every verb that needs a lock ([`resolution`]: the same flags
//! meaning the same everywhere), the apply options from `apply`'s flags (one node or a
//! fleet), and the async runtime of the verbs that talk to nodes or indexes.

use super::CommandError;
use crate::cli::ResolutionArgs;
use crate::converge::{LiveOptions, LockMode, ResolutionSettings, Source};

/// The resolution settings `args` name, once per invocation.
pub(super) fn resolution(args: &ResolutionArgs) -> Result<ResolutionSettings, CommandError> {
    let mut client = super::index::client_settings(&args.network)?;
    // The pip that tells the default index also prepares an sdist's metadata.
    client.build_python = args.pip_python.clone();
    let mode = match (args.locked, args.frozen, &args.lock) {
        (_, true, _) => LockMode::Frozen,
        // A lock file named on the command line is meant to be used as it is written.
        (true, false, _) | (false, false, Some(_)) => LockMode::Locked,
        (false, false, None) => LockMode::Auto,
    };
    let source = match (&args.snapshot, args.live) {
        (_, true) => Source::Live,
        (Some(path), false) => Source::Snapshot(path.clone()),
        (None, false) => Source::Auto,
    };
    Ok(ResolutionSettings {
        mode,
        lock_file: args.lock.clone(),
        source,
        live: LiveOptions {
            client,
            python: args.pip_python.clone(),
            max_projects: args.max_projects,
            max_releases: args.max_releases,
        },
        rules: args.rules.clone(),
    })
}

/// What `apply` takes from its flags, on one node or a fleet; no saved plan, no
/// question and no drain (the caller sets those).
pub(super) fn apply_options<'a>(
    args: &'a crate::cli::ApplyArgs,
    hash_command: &'a str,
    context: &'a crate::exec::ApplyContext,
    holder: crate::exec::node_lock::LockHolder,
) -> Result<crate::converge::ApplyOptions<'a>, CommandError> {
    Ok(crate::converge::ApplyOptions {
        saved: None,
        plan_path: &args.target,
        hash_command,
        verify: !args.no_verify,
        context,
        holder,
        break_lock: args.break_lock,
        delivery: args.fetch.delivery()?,
        confirm: None,
        drain: None,
        rollback_on_failure: args.rollout.rollback_on_failure,
    })
}

/// A runtime for the verbs that talk to nodes or indexes.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CommandError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CommandError::Runtime)
}
