//! A command: the operator's own pre command (before the node's first change: take it
//! out of a load balancer, a service mesh) and post command (once it is verified and its
//! service is up), each a shell command run with `sh -c` on the controller or on the
//! node, with the node's name, the run's id and the phase in its environment
//! ([`NODE_ENV`], [`RUN_ENV`], [`PHASE_ENV`]). On the node the values reach the command
//! line only through the one quoting function. A node that fails gets no post command:
//! it stays out.

use std::time::Duration;

use crate::converge::{Drain, DrainFuture, DrainStep};
use crate::transport::{NodeCommand, Transport};

use super::error::DrainError;
use super::{CommandSide, controller};

/// The node's inventory name, e.g. `node3`.
pub const NODE_ENV: &str = "CUDA_UPGRADE_NODE";
/// The run's id, e.g. `1796241671-4242`.
pub const RUN_ENV: &str = "CUDA_UPGRADE_RUN_ID";
/// `pre` or `post`.
pub const PHASE_ENV: &str = "CUDA_UPGRADE_PHASE";

/// One node's pre and post commands.
pub struct Command {
    /// e.g. `lb-ctl disable "$CUDA_UPGRADE_NODE"`.
    pub pre: Option<String>,
    /// e.g. `lb-ctl enable "$CUDA_UPGRADE_NODE"`.
    pub post: Option<String>,
    /// Where they run.
    pub on: CommandSide,
    /// The node's inventory name.
    pub node: String,
    /// The run's id.
    pub run: String,
    /// How long each may run.
    pub timeout: Duration,
}

impl Command {
    async fn phase(
        &self,
        transport: &Transport,
        phase: &'static str,
        script: Option<&str>,
    ) -> Result<Option<String>, DrainError> {
        let Some(script) = script else {
            return Ok(None);
        };
        let env = [
            (NODE_ENV, self.node.clone()),
            (RUN_ENV, self.run.clone()),
            (PHASE_ENV, phase.to_string()),
        ];
        let what = format!("run the {phase} command for `{}`", self.node);
        match self.on {
            CommandSide::Controller => {
                let args = ["-c", "--", script].map(str::to_string);
                let finished = controller::run_ok(&what, "sh", &args, &env, self.timeout).await?;
                Ok(Some(finished.tail()))
            }
            CommandSide::Node => {
                let mut command = NodeCommand::new("env").arg("--");
                for (name, value) in &env {
                    command = command.arg(format!("{name}={value}"));
                }
                let command = command
                    .args(["sh", "-c", "--", script])
                    .bounded(self.timeout);
                let output =
                    transport
                        .run(&command, None)
                        .await
                        .map_err(|source| DrainError::Node {
                            phase,
                            node: self.node.clone(),
                            source,
                        })?;
                if !output.success() {
                    return Err(DrainError::Failed {
                        what,
                        command: command.display(),
                        status: output.status.map_or_else(
                            || "a signal".to_string(),
                            |code| format!("exit status {code}"),
                        ),
                        output: output.tail(3),
                    });
                }
                Ok(Some(output.tail(3)))
            }
        }
    }
}

fn said(phase: &str, output: Option<String>) -> String {
    match output {
        None => format!("no {phase} command"),
        Some(output) if output.trim().is_empty() => format!("{phase} command ran"),
        Some(output) => format!("{phase} command ran: {}", output.trim()),
    }
}

impl Drain for Command {
    fn describe(&self) -> String {
        let on = match self.on {
            CommandSide::Controller => "on the controller",
            CommandSide::Node => "on the node",
        };
        format!("pre/post commands {on}")
    }

    fn take_out<'a>(&'a self, transport: &'a Transport) -> DrainFuture<'a> {
        Box::pin(async move {
            let output = self.phase(transport, "pre", self.pre.as_deref()).await?;
            Ok(DrainStep {
                in_service: false,
                detail: said("pre", output),
            })
        })
    }

    fn put_back<'a>(&'a self, transport: &'a Transport) -> DrainFuture<'a> {
        Box::pin(async move {
            let output = self.phase(transport, "post", self.post.as_deref()).await?;
            Ok(DrainStep {
                in_service: true,
                detail: said("post", output),
            })
        })
    }

    fn keep_out<'a>(&'a self, _transport: &'a Transport, reason: &'a str) -> DrainFuture<'a> {
        Box::pin(async move {
            Ok(DrainStep {
                in_service: false,
                detail: format!("left out of service (no post command): {reason}"),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_and_post_see_the_node_and_the_run_on_either_side() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let script = format!(
            "printf '%s %s %s\\n' \"$CUDA_UPGRADE_PHASE\" \"$CUDA_UPGRADE_NODE\" \"$CUDA_UPGRADE_RUN_ID\" >> '{}'",
            log.display()
        );
        let transport = Transport::Local(crate::transport::LocalTransport::new());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for on in [CommandSide::Controller, CommandSide::Node] {
            let drain = Command {
                pre: Some(script.clone()),
                post: Some(script.clone()),
                on,
                node: "node 'x'".to_string(),
                run: "17-42".to_string(),
                timeout: Duration::from_secs(30),
            };
            runtime.block_on(async {
                Drain::take_out(&drain, &transport).await.unwrap();
                Drain::put_back(&drain, &transport).await.unwrap();
            });
        }
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "pre node 'x' 17-42\npost node 'x' 17-42\n".repeat(2)
        );
    }

    #[test]
    fn a_failing_pre_command_fails_the_drain() {
        let transport = Transport::Local(crate::transport::LocalTransport::new());
        let drain = Command {
            pre: Some("echo refused >&2; exit 3".to_string()),
            post: None,
            on: CommandSide::Controller,
            node: "node0".to_string(),
            run: "17-42".to_string(),
            timeout: Duration::from_secs(30),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let error = runtime
            .block_on(Drain::take_out(&drain, &transport))
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("exit status 3") && text.contains("refused"),
            "{text}"
        );
    }
}
