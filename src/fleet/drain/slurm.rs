//! Slurm: `scontrol update nodename=N state=drain reason="cuda-upgrade RUN"` before the
//! node's first change, then a wait (bounded by `--drain-timeout`, polling `squeue`)
//! until no job runs on it; once verified, `state=resume`, but only while the reason is
//! still this run's; a node that fails stays drained with a reason naming the failure.
//! A node that was already drained or down for another reason is changed but left as it
//! was found. The commands run on the controller (where `upgrade` runs; `SLURM_CONF` and
//! the usual Slurm environment apply).
//!
//! See: <https://slurm.schedmd.com/scontrol.html#OPT_State_1>

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::converge::{Drain, DrainFuture, DrainStep};
use crate::text::text_value;
use crate::transport::Transport;

use super::controller;
use super::error::DrainError;
use super::name::{DrainNodeName, failure_line};

/// How long one `scontrol`, `squeue` or `sinfo` may take.
const COMMAND_BOUND: Duration = Duration::from_secs(60);

/// How often the node's jobs are asked for while it drains.
const POLL: Duration = Duration::from_millis(500);

/// The job states that still occupy a node.
const BUSY_STATES: &str = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED";

/// Every reason this tool sets starts with it; a node drained with another reason was
/// taken out by someone else.
pub const REASON_PREFIX: &str = "cuda-upgrade ";

/// The longest reason this tool sets.
const REASON_MAX: usize = 200;

/// One node's Slurm drain.
pub struct Slurm {
    /// The Slurm node, e.g. `gpu3`.
    node: DrainNodeName,
    /// The run's id, e.g. `1796241671-4242`.
    run: String,
    /// How long its jobs may take to end.
    timeout: Duration,
    /// How the node was found when it was out of service already, e.g. `drained:
    /// maintenance`: it is then left so.
    found_out: Mutex<Option<String>>,
}

impl Slurm {
    /// `node`'s drain for the run `run`.
    pub fn new(node: DrainNodeName, run: String, timeout: Duration) -> Self {
        Self {
            node,
            run,
            timeout,
            found_out: Mutex::new(None),
        }
    }

    /// This run's reason, e.g. `cuda-upgrade 1796241671-4242`.
    fn reason(&self) -> String {
        format!("{REASON_PREFIX}{}", self.run)
    }

    fn found_out(&self) -> Option<String> {
        self.found_out.lock().ok().and_then(|found| found.clone())
    }

    /// The node's state and reason, e.g. (`drained`, `cuda-upgrade 17-42`); `none` for
    /// no reason.
    async fn state(&self) -> Result<(String, String), DrainError> {
        let args = vec![
            "--noheader".to_string(),
            "--Node".to_string(),
            format!("--nodes={}", self.node),
            "--format=%T|%E".to_string(),
        ];
        let what = format!("read the state of the slurm node `{}`", self.node);
        let finished = controller::run_ok(&what, "sinfo", &args, &[], COMMAND_BOUND).await?;
        let line = finished.stdout.lines().next().unwrap_or_default().trim();
        if line.is_empty() {
            return Err(DrainError::Failed {
                what,
                command: controller::display("sinfo", &args),
                status: "exit status 0".to_string(),
                output: "no such node".to_string(),
            });
        }
        let (state, reason) = line.split_once('|').unwrap_or((line, "none"));
        Ok((state.to_string(), reason.to_string()))
    }

    /// `scontrol update nodename=N state=STATE [reason=REASON]`.
    async fn update(&self, state: &str, reason: Option<&str>) -> Result<(), DrainError> {
        let mut args = vec![
            "update".to_string(),
            format!("nodename={}", self.node),
            format!("state={state}"),
        ];
        if let Some(reason) = reason {
            args.push(format!("reason={reason}"));
        }
        let what = format!("set the slurm node `{}` to {state}", self.node);
        controller::run_ok(&what, "scontrol", &args, &[], COMMAND_BOUND).await?;
        Ok(())
    }

    /// The ids of the jobs that still occupy the node, e.g. `["7"]`.
    async fn jobs(&self) -> Result<Vec<String>, DrainError> {
        let args = vec![
            "--noheader".to_string(),
            format!("--nodelist={}", self.node),
            format!("--states={BUSY_STATES}"),
            "--format=%i".to_string(),
        ];
        let what = format!("list the jobs on the slurm node `{}`", self.node);
        let finished = controller::run_ok(&what, "squeue", &args, &[], COMMAND_BOUND).await?;
        Ok(finished
            .stdout
            .split_whitespace()
            .map(str::to_string)
            .collect())
    }

    async fn take_out(&self) -> Result<DrainStep, DrainError> {
        let started = Instant::now();
        let (state, reason) = self.state().await?;
        let out = ["drain", "down", "fail", "maint"]
            .iter()
            .any(|word| state.contains(word));
        if out && !reason.starts_with(REASON_PREFIX) {
            // Whoever set the reason wrote it: it is shown escaped, on its line.
            let found = format!("{}: {}", text_value(&state), text_value(&reason));
            if let Ok(mut slot) = self.found_out.lock() {
                *slot = Some(found.clone());
            }
            return Ok(DrainStep {
                in_service: false,
                detail: format!("already out of service ({found}); it is left so"),
            });
        }
        self.update("drain", Some(&self.reason())).await?;
        let mut waited_for: Vec<String> = Vec::new();
        loop {
            let jobs = self.jobs().await?;
            if jobs.is_empty() {
                let waited = if waited_for.is_empty() {
                    String::new()
                } else {
                    format!(" (waited for job {})", waited_for.join(", "))
                };
                return Ok(DrainStep {
                    in_service: false,
                    detail: format!(
                        "drained with reason `{}`; no job running after {:.1} s{waited}",
                        self.reason(),
                        started.elapsed().as_secs_f64()
                    ),
                });
            }
            for job in &jobs {
                if !waited_for.contains(job) {
                    waited_for.push(job.clone());
                }
            }
            if started.elapsed() >= self.timeout {
                return Err(DrainError::JobsRunning {
                    node: self.node.to_string(),
                    jobs: jobs.join(", "),
                    seconds: self.timeout.as_secs(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn put_back(&self) -> Result<DrainStep, DrainError> {
        if let Some(found) = self.found_out() {
            return Ok(DrainStep {
                in_service: false,
                detail: format!("left out of service as it was found ({found})"),
            });
        }
        let (_, reason) = self.state().await?;
        if reason != self.reason() {
            return Ok(DrainStep {
                in_service: false,
                detail: format!(
                    "not resumed: its reason is now `{}`, no longer this run's",
                    text_value(&reason)
                ),
            });
        }
        self.update("resume", None).await?;
        Ok(DrainStep {
            in_service: true,
            detail: "resumed".to_string(),
        })
    }

    async fn keep_out(&self, failure: &str) -> Result<DrainStep, DrainError> {
        if let Some(found) = self.found_out() {
            return Ok(DrainStep {
                in_service: false,
                detail: format!("left out of service as it was found ({found})"),
            });
        }
        let reason = failure_reason(&self.reason(), failure);
        self.update("drain", Some(&reason)).await?;
        Ok(DrainStep {
            in_service: false,
            detail: format!("left drained with reason `{reason}`"),
        })
    }
}

/// A failed node's reason: the failure's first line, escaped (see [`failure_line`]), at
/// most [`REASON_MAX`] characters, e.g. `cuda-upgrade 17-42 failed: step pip failed`.
fn failure_reason(reason: &str, failure: &str) -> String {
    let line = failure_line(failure);
    let mut text = format!("{reason} failed: {line}");
    if text.chars().count() > REASON_MAX {
        text = text.chars().take(REASON_MAX - 1).collect::<String>() + "…";
    }
    text
}

impl Drain for Slurm {
    fn describe(&self) -> String {
        format!("slurm node `{}`", self.node)
    }

    fn take_out<'a>(&'a self, _transport: &'a Transport) -> DrainFuture<'a> {
        Box::pin(async move { Ok(Slurm::take_out(self).await?) })
    }

    fn put_back<'a>(&'a self, _transport: &'a Transport) -> DrainFuture<'a> {
        Box::pin(async move { Ok(Slurm::put_back(self).await?) })
    }

    fn keep_out<'a>(&'a self, _transport: &'a Transport, reason: &'a str) -> DrainFuture<'a> {
        Box::pin(async move { Ok(Slurm::keep_out(self, reason).await?) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_reason_is_one_bounded_line() {
        assert_eq!(
            failure_reason("cuda-upgrade 1-2", "step pip failed\nmore"),
            "cuda-upgrade 1-2 failed: step pip failed"
        );
        let long = failure_reason("cuda-upgrade 1-2", &"x".repeat(500));
        assert_eq!(long.chars().count(), REASON_MAX);
    }

    /// See: issue 33 — the reason every cluster user reads is one line whatever the
    /// failure holds: a Unicode line separator ends it, a control is escaped.
    #[test]
    fn a_failure_reason_holds_no_line_separator_or_control() {
        assert_eq!(
            failure_reason("cuda-upgrade 1-2", "step pip failed\u{2028}Reason=x"),
            "cuda-upgrade 1-2 failed: step pip failed"
        );
        assert_eq!(
            failure_reason("cuda-upgrade 1-2", "step \u{1b}[2Jpip failed"),
            "cuda-upgrade 1-2 failed: step \\u{1b}[2Jpip failed"
        );
    }
}
