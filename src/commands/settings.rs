//! What the verbs share beyond their own flags: the live-resolution options from
//! `--live` and its network flags, the apply options from `apply`'s flags (one node or
//! a fleet), and the async runtime of the verbs that talk to nodes or indexes.

use super::CommandError;

/// The live resolution `--live` asks for, from its flags; `None` without `--live`.
pub(super) fn live_options(
    args: &crate::cli::LiveArgs,
) -> Result<Option<crate::converge::LiveOptions>, CommandError> {
    if !args.live {
        return Ok(None);
    }
    let mut client = super::index::client_settings(&args.network)?;
    // The pip that tells the default index also prepares an sdist's metadata.
    client.build_python = args.pip_python.clone();
    Ok(Some(crate::converge::LiveOptions {
        client,
        python: args.pip_python.clone(),
        max_projects: args.max_projects,
        max_releases: args.max_releases,
    }))
}

/// What `apply` takes from its flags, on one node or a fleet; no saved plan or lock, no
/// question and no drain (the caller sets those).
pub(super) fn apply_options<'a>(
    args: &'a crate::cli::ApplyArgs,
    live: Option<&'a crate::converge::LiveOptions>,
    hash_command: &'a str,
    context: &'a crate::exec::ApplyContext,
    holder: crate::exec::node_lock::LockHolder,
) -> Result<crate::converge::ApplyOptions<'a>, CommandError> {
    Ok(crate::converge::ApplyOptions {
        saved: None,
        plan_path: args.lock.as_deref().unwrap_or(&args.target),
        snapshot: args.snapshot.as_deref(),
        live,
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
