//! Settings: the one place that reads the process environment.
//!
//! Flags are parsed by `cli`; this module supplies what flags leave open — the
//! environment variables the tool honours and the defaults derived from them (the
//! cache directory). Nothing here performs network I/O or writes files.

pub mod env;

use std::path::PathBuf;

/// The default on-disk cache of index responses:
/// `$XDG_CACHE_HOME/cuda-upgrade`, else `$HOME/.cache/cuda-upgrade`, e.g.
/// `/root/.cache/cuda-upgrade`; `None` when neither variable is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(cache_home) = env::var(env::XDG_CACHE_HOME) {
        return Some(PathBuf::from(cache_home).join(CACHE_DIR_NAME));
    }
    env::var(env::HOME).map(|home| PathBuf::from(home).join(".cache").join(CACHE_DIR_NAME))
}

/// Where the controller keeps the files it fetches for nodes (`--fetch controller`, git
/// bundles, runfiles): `downloads` in [`default_cache_dir`], else
/// `.cache/cuda-upgrade/downloads`.
pub fn default_downloads_dir() -> PathBuf {
    default_cache_dir()
        .unwrap_or_else(|| PathBuf::from(".cache/cuda-upgrade"))
        .join("downloads")
}

/// Where fleet runs keep their logs: `$XDG_STATE_HOME/cuda-upgrade/runs`, else
/// `$HOME/.local/state/cuda-upgrade/runs`; `None` when neither variable is set.
pub fn default_runs_dir() -> Option<PathBuf> {
    let state = env::var(env::XDG_STATE_HOME)
        .map(PathBuf::from)
        .or_else(|| env::var(env::HOME).map(|home| PathBuf::from(home).join(".local/state")))?;
    Some(state.join(CACHE_DIR_NAME).join("runs"))
}

/// Whether `--color auto` colours a stream: not when `NO_COLOR` is set (non-empty),
/// always when `CLICOLOR_FORCE` is set (non-empty, not `0`), else when the stream is a
/// terminal (`terminal`).
///
/// See: <https://no-color.org>, <https://bixense.com/clicolors/>
pub fn auto_color(terminal: bool) -> bool {
    if env::var(env::NO_COLOR).is_some() {
        return false;
    }
    if env::var(env::CLICOLOR_FORCE).is_some_and(|value| value != "0") {
        return true;
    }
    terminal
}

/// The cache directory's own name under the user's cache root, e.g. `cuda-upgrade`.
const CACHE_DIR_NAME: &str = "cuda-upgrade";

/// This controller's host name, e.g. `ci-controller` (Linux: `/proc/sys/kernel/hostname`).
pub fn controller_host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
}

/// Who runs `upgrade` here, e.g. `root`: `$USER`, else `$LOGNAME`, else the name of
/// the process's uid in `/etc/passwd`, else `uid 0`.
pub fn controller_user() -> String {
    if let Some(name) = env::var(env::USER).or_else(|| env::var(env::LOGNAME)) {
        return name;
    }
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next().map(str::to_string))
        });
    let Some(uid) = uid else {
        return "unknown".to_string();
    };
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|line| {
                let fields: Vec<&str> = line.split(':').collect();
                (fields.get(2) == Some(&uid.as_str()))
                    .then(|| fields.first().map(|name| (*name).to_string()))
                    .flatten()
            })
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}
