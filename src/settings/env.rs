//! Names of the environment variables the tool reads, as constants, and the one
//! function that reads them.
//!
//! The `UPGRADE_*` variables stand for flags a fleet operator gives every time; clap
//! reads them (`#[arg(env = …)]` names these constants), and a flag on the command
//! line wins.
//!
//! Variables that only child processes read (pip reads `PIP_CONFIG_FILE` itself) are
//! not listed here: the tool never interprets them.

/// pip's index URL override, e.g. `https://mirror.example/simple`; takes precedence
/// over pip's configuration files when the manifest's index has no `url`.
pub const PIP_INDEX_URL: &str = "PIP_INDEX_URL";

/// The user's cache root (XDG base directories), e.g. `/home/ops/.cache`.
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";

/// The user's state root (XDG base directories), e.g. `/home/ops/.local/state`; fleet
/// runs keep their logs below it.
pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";

/// The user's home directory, e.g. `/home/ops`; `~/.cache` is the fallback cache root.
pub const HOME: &str = "HOME";

/// The login name, e.g. `root`; recorded in a node lock as who holds the node.
pub const USER: &str = "USER";

/// The login name where `USER` is unset (some cron and CI environments).
pub const LOGNAME: &str = "LOGNAME";

/// The `ssh_config` file for every verb that reaches hosts (`--ssh-config`), e.g.
/// `/etc/cuda-upgrade/ssh_config`.
pub const UPGRADE_SSH_CONFIG: &str = "UPGRADE_SSH_CONFIG";

/// The inventory of the fleet verbs (`-i`, `--inventory`), e.g.
/// `/etc/cuda-upgrade/inventory.yaml`.
pub const UPGRADE_INVENTORY: &str = "UPGRADE_INVENTORY";

/// Set (to anything but empty): no colour, whatever the terminal (see no-color.org).
pub const NO_COLOR: &str = "NO_COLOR";

/// Set (to anything but empty or `0`): colour even where the output is no terminal.
pub const CLICOLOR_FORCE: &str = "CLICOLOR_FORCE";

/// The index snapshot for every verb that resolves offline (`--snapshot`), e.g.
/// `/srv/cuda-upgrade/snapshot.json`.
pub const UPGRADE_SNAPSHOT: &str = "UPGRADE_SNAPSHOT";

/// Rules layered over the embedded tables for every verb that resolves (`--rules`),
/// e.g. `/etc/cuda-upgrade/rules`.
pub const UPGRADE_RULES: &str = "UPGRADE_RULES";

/// The cache of index responses (`--cache-dir`), e.g. `/var/cache/cuda-upgrade`.
pub const UPGRADE_CACHE_DIR: &str = "UPGRADE_CACHE_DIR";

/// The value of an environment variable, `None` when unset, empty or not UTF-8.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// `program` itself when it names a path (`./uv`, `/usr/bin/python3`), else its first
/// match on the `PATH` that `lookup` reads (e.g. [`var`]).
pub fn on_path(
    program: &std::path::Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Option<std::path::PathBuf> {
    if program.components().count() > 1 {
        return Some(program.to_path_buf());
    }
    let path = lookup("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Every environment variable that is UTF-8, as `(name, value)`; for fingerprints of what
/// a child process reads (e.g. pip's `PIP_*`), never interpreted here.
pub fn all() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}
