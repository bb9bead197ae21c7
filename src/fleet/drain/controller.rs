//! Programs the drain integrations run on the controller (`scontrol`, `squeue`,
//! `kubectl`, an operator's command): an argument list, never a shell line built from
//! values; bounded in time, killed when the bound ends.

use std::process::Stdio;
use std::time::Duration;

use super::error::DrainError;

/// What a finished program returned.
pub struct Finished {
    /// Its exit status; `None` when killed by a signal.
    pub status: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Finished {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// The last lines of its output, for an error, e.g. `error: nodes "gpu3" not found`.
    pub fn tail(&self) -> String {
        let text = format!("{}{}", self.stdout, self.stderr);
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .collect();
        lines[lines.len().saturating_sub(3)..].join(" / ")
    }
}

/// `program args…` as one line for messages, each word through the one quoting
/// function, e.g. `scontrol update nodename=node2 'reason=cuda-upgrade 17-42'`.
pub fn display(program: &str, args: &[String]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(crate::shell::quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `program` with `args` (and `env` added) on the controller for at most `bound`;
/// `what` names the purpose in errors, e.g. `drain the slurm node \`node2\``.
pub async fn run(
    what: &str,
    program: &str,
    args: &[String],
    env: &[(&str, String)],
    bound: Duration,
) -> Result<Finished, DrainError> {
    let command = display(program, args);
    let mut child = tokio::process::Command::new(program);
    child
        .args(args)
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = child.output();
    match tokio::time::timeout(bound, output).await {
        Err(_) => Err(DrainError::Timeout {
            what: what.to_string(),
            command,
            seconds: bound.as_secs(),
        }),
        Ok(Err(source)) => Err(DrainError::Spawn { command, source }),
        Ok(Ok(output)) => Ok(Finished {
            status: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }),
    }
}

/// [`run`], failing unless it exits 0.
pub async fn run_ok(
    what: &str,
    program: &str,
    args: &[String],
    env: &[(&str, String)],
    bound: Duration,
) -> Result<Finished, DrainError> {
    let finished = run(what, program, args, env, bound).await?;
    if finished.success() {
        return Ok(finished);
    }
    Err(DrainError::Failed {
        what: what.to_string(),
        command: display(program, args),
        status: finished.status.map_or_else(
            || "a signal".to_string(),
            |code| format!("exit status {code}"),
        ),
        output: finished.tail(),
    })
}
