//! What the verbs share beyond their own flags: the live-resolution options from
//! `--live` and its network flags, and the async runtime of the verbs that talk to
//! nodes or indexes.

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

/// A runtime for the verbs that talk to nodes or indexes.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CommandError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CommandError::Runtime)
}
