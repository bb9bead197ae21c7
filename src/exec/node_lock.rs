//! The node lock: one `apply` at a time on a node.
//!
//! The lock is a directory created atomically on the node (`mkdir`), holding who took
//! it (controller host, user, pid, start time) and a token only its holder knows. It is
//! a file, not a process: it survives a dropped connection, so a second apply is refused
//! while the first may still be running there. A lock whose holder ran on this very
//! controller and whose pid no longer runs is reported as stale; `--break-lock` removes
//! any lock before taking it. The holder removes it when it is done, and only its own.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::transport::{NodeCommand, Transport, TransportError};

/// The lock directory on every node (`/run`: a reboot ends any apply, and the lock too).
pub const NODE_LOCK: &str = "/run/cuda-upgrade/apply.lock";

/// Who holds a node, e.g. `root` on `ci-controller`, pid 4242, since 1764700000.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// The controller's host name, e.g. `ci-controller`.
    pub controller: String,
    /// The user who ran `upgrade apply` there, e.g. `root`.
    pub user: String,
    /// Its process id on the controller.
    pub pid: u32,
    /// When it took the lock, in seconds since the Unix epoch.
    pub started: u64,
}

impl LockHolder {
    /// This process, on this controller.
    pub fn this_process(controller: String, user: String) -> Self {
        Self {
            controller,
            user,
            pid: std::process::id(),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
        }
    }

    /// In words, e.g. `user root on ci-controller, pid 4242, since 2026-12-02 19:45:01 UTC`.
    pub fn describe(&self) -> String {
        format!(
            "user `{}` on `{}`, pid {}, since {}",
            self.user,
            self.controller,
            self.pid,
            crate::calendar::utc(self.started)
        )
    }
}

/// A lock this process holds; [`NodeLock::release`] gives it back.
#[derive(Debug)]
pub struct NodeLock {
    token: String,
    /// The journal's last line when the lock was taken (`None`: no journal).
    journal_tail: Option<String>,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum NodeLockError {
    /// Another apply holds the node.
    #[error("Refusing to apply on `{node}`: another apply holds it ({}){}", holder.as_ref().map_or_else(|| "holder unknown".to_string(), LockHolder::describe), if *stale { "; that process no longer runs on this controller: the lock is stale" } else { "" })]
    Held {
        /// e.g. `node0`.
        node: String,
        /// Who, when the lock says.
        holder: Option<LockHolder>,
        /// The holder ran on this controller and is gone.
        stale: bool,
    },
    /// The lock could not be taken or read.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

const ACQUIRE_SCRIPT: &str = r#"set -eu
lock=$1 holder=$2 token=$3 break_lock=$4 journal=$5
mkdir -p -- "${lock%/*}"
if [ "$break_lock" = 1 ]; then
    rm -rf -- "$lock"
fi
if mkdir -m 700 -- "$lock" 2>/dev/null; then
    printf '%s\n' "$holder" >"$lock/holder"
    printf '%s\n' "$token" >"$lock/token"
    printf 'acquired\n'
    # What the journal ended with when the lock was taken: whether another apply
    # changed the node since this one probed it.
    if [ -f "$journal" ]; then
        tail -n 1 -- "$journal"
    fi
else
    printf 'held\n'
    cat -- "$lock/holder" 2>/dev/null || true
fi
"#;

const RELEASE_SCRIPT: &str = r#"set -eu
lock=$1 token=$2
if [ "$(cat -- "$lock/token" 2>/dev/null || true)" = "$token" ]; then
    rm -rf -- "$lock"
fi
"#;

impl NodeLock {
    /// Take the node's lock for `holder`, or say who holds it. With `break_lock`, any
    /// existing lock is removed first.
    pub async fn acquire(
        transport: &Transport,
        holder: &LockHolder,
        break_lock: bool,
    ) -> Result<Self, NodeLockError> {
        let token = hex::encode(Sha256::digest(format!(
            "{}:{}:{:?}",
            holder.pid,
            holder.started,
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
        )));
        let holder_json = serde_json::to_string(holder).unwrap_or_default();
        let command = NodeCommand::new("sh")
            .arg("-c")
            .script("node-lock", ACQUIRE_SCRIPT)
            .arg("node-lock")
            .arg(NODE_LOCK)
            .arg(holder_json)
            .arg(token.clone())
            .arg(if break_lock { "1" } else { "0" })
            .arg(super::journal::JOURNAL);
        let output = transport.run(&command, None).await?;
        let text = output.stdout_text();
        let mut lines = text.lines();
        match lines.next() {
            Some("acquired") if output.success() => Ok(Self {
                token,
                journal_tail: lines
                    .next()
                    .map(str::to_string)
                    .filter(|line| !line.is_empty()),
            }),
            Some("held") if output.success() => {
                let holder: Option<LockHolder> = lines
                    .next()
                    .and_then(|line| serde_json::from_str(line).ok());
                let stale = holder.as_ref().is_some_and(is_gone_here);
                Err(NodeLockError::Held {
                    node: transport.name().to_string(),
                    holder,
                    stale,
                })
            }
            _ => Err(TransportError::run(
                transport.name(),
                &command,
                std::io::Error::other(format!(
                    "exit status {:?}: {}",
                    output.status,
                    output.tail(5)
                )),
            )
            .into()),
        }
    }

    /// The journal's last line when the lock was taken, e.g. to compare with what the
    /// apply's probe read: equal, no other apply changed the node in between.
    pub fn journal_tail(&self) -> Option<&str> {
        self.journal_tail.as_deref()
    }

    /// Give the lock back (only ours: a lock broken and taken by another apply stays).
    pub async fn release(self, transport: &Transport) -> Result<(), TransportError> {
        let command = NodeCommand::new("sh")
            .arg("-c")
            .script("node-unlock", RELEASE_SCRIPT)
            .arg("node-unlock")
            .arg(NODE_LOCK)
            .arg(self.token);
        transport.run(&command, None).await.map(|_| ())
    }
}

/// Whether the holder ran on this controller (by host name) and its pid is gone.
fn is_gone_here(holder: &LockHolder) -> bool {
    crate::settings::controller_host().is_some_and(|here| here == holder.controller)
        && !Path::new(&format!("/proc/{}", holder.pid)).exists()
}
