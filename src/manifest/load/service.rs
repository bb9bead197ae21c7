//! `service`: how the node's production service is started again once the verification
//! server stopped: a systemd unit restarted, or a command started detached with its log;
//! a health URL and a bound say when it is up.

use super::toolkit::Credentials;
use super::*;

/// How long a service may take to be up unless `service.timeout` says.
pub const DEFAULT_SERVICE_TIMEOUT: Duration = Duration::from_secs(300);

impl Checker {
    pub(super) fn service(&mut self, node: &Node) -> Option<Service> {
        const KEYS: &[&str] = &["systemd", "command", "workdir", "log", "health", "timeout"];
        let mut fields = self.fields(node, "service", KEYS)?;
        let systemd = fields.take("systemd");
        let command = fields.take("command");
        let workdir = fields.take("workdir");
        let log = fields.take("log");
        let start = match (systemd, command) {
            (Some(unit), None) => {
                for (extra, name) in [(workdir, "workdir"), (log, "log")] {
                    if let Some(extra) = extra {
                        self.error(
                            extra.span,
                            format!("`service.{name}` goes with `service.command`, not `service.systemd`"),
                        );
                    }
                }
                self.unit(unit).map(|unit| ServiceStart::Systemd { unit })
            }
            (None, Some(command)) => {
                let words = self.program_words(command, "service.command");
                let workdir = workdir.and_then(|n| self.absolute_path(n, "service.workdir"));
                let log = match log {
                    Some(n) => self.log_path(n, "service.log"),
                    None => {
                        self.error(
                            command.span,
                            "`service.command` needs `service.log` (where its output goes)",
                        );
                        None
                    }
                };
                Some(ServiceStart::Command {
                    command: words?,
                    workdir,
                    log: log?,
                })
            }
            (Some(_), Some(command)) => {
                self.error(
                    command.span,
                    "`service` takes `systemd` or `command`, not both",
                );
                None
            }
            (None, None) => {
                self.error(
                    node.span,
                    "`service` needs `systemd` (a unit to restart) or `command` (a program to start)",
                );
                None
            }
        };
        let health = fields.take("health").and_then(|n| {
            self.url(
                n,
                "service.health",
                &["http", "https"],
                Credentials::Refused,
            )
        });
        let timeout = match fields.take("timeout") {
            None => Some(DEFAULT_SERVICE_TIMEOUT),
            Some(n) => {
                let text = self.non_empty_string(n, "service.timeout")?;
                match parse_duration(&text) {
                    Ok(duration) => Some(duration),
                    Err(hint) => {
                        self.error_with_hint(n.span, format!("invalid duration `{text}` for `service.timeout`: expected e.g. `90s`, `10m` or `1h30m`"), hint);
                        None
                    }
                }
            }
        };
        self.finish(fields);
        Some(Service {
            start: start?,
            health,
            timeout: timeout?,
        })
    }

    /// A systemd unit name, e.g. `sglang.service`: letters, digits and `@._:-\`, not
    /// starting with `-`.
    fn unit(&mut self, node: &Node) -> Option<String> {
        let text = self.line(node, "service.systemd")?;
        let fits = !text.starts_with('-')
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "@._:-\\".contains(c));
        if !fits {
            self.error_with_hint(
                node.span,
                format!("invalid `service.systemd` `{text}`: not a systemd unit name"),
                "name the unit, e.g. `sglang.service`",
            );
            return None;
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::super::load_str;
    use super::*;

    const BASE: &str = "schema: 1\nname: n\ntarget: { python: /opt/env/bin/python3 }\n";

    fn load(service: &str) -> Result<Manifest, String> {
        load_str(&format!("{BASE}service:\n{service}"), "m.yaml", None)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn a_unit_or_a_command_with_its_log() {
        let manifest =
            load("  systemd: sglang.service\n  health: http://127.0.0.1:30000/health\n").unwrap();
        let service = manifest.service.unwrap();
        assert_eq!(
            service.start,
            ServiceStart::Systemd {
                unit: "sglang.service".to_string()
            }
        );
        assert_eq!(service.timeout, DEFAULT_SERVICE_TIMEOUT);
        let manifest = load(
            "  command: python3 -m sglang.launch_server --port 30000\n  log: /var/log/sglang.log\n  timeout: 10m\n",
        )
        .unwrap();
        let service = manifest.service.unwrap();
        match service.start {
            ServiceStart::Command { command, log, .. } => {
                assert_eq!(command[0], "python3");
                assert_eq!(log, PathBuf::from("/var/log/sglang.log"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mistakes_are_located() {
        for (service, wanted) in [
            (
                "  systemd: a.service\n  command: [x]\n",
                "m.yaml:6:12: `service` takes `systemd` or `command`, not both",
            ),
            (
                "  command: [x]\n",
                "m.yaml:5:12: `service.command` needs `service.log`",
            ),
            (
                "  systemd: '-x'\n",
                "m.yaml:5:12: invalid `service.systemd` `-x`",
            ),
            (
                "  systemd: a.service\n  log: /var/log/x\n",
                "m.yaml:6:8: `service.log` goes with `service.command`",
            ),
            ("  health: http://x/\n", "`service` needs `systemd`"),
            ("  systemd: a.service\n  restart: always\n", "restart"),
            (
                "  command: [x]\n  log: /etc/x.log\n",
                "`/etc` belongs to the system",
            ),
        ] {
            let error = load(service).unwrap_err();
            assert!(error.contains(wanted), "{wanted}\n{error}");
        }
    }
}
