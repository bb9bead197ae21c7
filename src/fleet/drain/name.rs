//! A node's name in Slurm or Kubernetes, the only form in which a name reaches
//! `scontrol`, `sinfo`, `squeue` or `kubectl`: one node, never an expression that names
//! many (`ALL`, a hostlist `node[1-4]` or `a,b`, a nodeset `@gpu`), never an option
//! (`-x`), never a line of its own. Every value that names a drained node (the
//! `--drain-name` flag, the host's `cuda_upgrade_drain_name`, the inventory name it
//! defaults to) is parsed here where it enters.
//!
//! Slurm takes letters, digits, `.`, `_` and `-`; Kubernetes a DNS subdomain (RFC 1123:
//! lowercase letters, digits, `-`, dot-separated labels of at most 63 characters that
//! start and end with a letter or digit). Both at most 253 bytes.
//!
//! See: <https://slurm.schedmd.com/scontrol.html#OPT_NodeName_2> and
//! <https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-subdomain-names>

use std::fmt;

use crate::text::text_value;

/// The longest node name either system takes, in bytes (a DNS name's bound).
const NAME_MAX: usize = 253;

/// The longest label of a Kubernetes node name.
const LABEL_MAX: usize = 63;

/// Characters of Slurm's hostlist syntax and of nodeset expressions (ClusterShell's
/// `@group`, `!`/`^`/`&` operators, `*`/`?` patterns), and `=`, which `scontrol` reads as
/// the start of another `key=value`: each makes a name stand for other nodes.
const EXPRESSION: &[char] = &['[', ']', ',', '@', '*', '?', '^', '!', '=', '&'];

/// Which system takes the name; their rules differ (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRules {
    /// `scontrol`, `sinfo`, `squeue`: letters, digits, `.`, `_`, `-`.
    Slurm,
    /// `kubectl`: an RFC 1123 DNS subdomain.
    Kubernetes,
}

/// One node's name as Slurm or Kubernetes knows it, e.g. `gpu07`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainNodeName(String);

/// Why a text is no node name, e.g. `ALL`, which names every node of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrainNameError {
    /// Nothing.
    #[error("the node name is empty")]
    Empty,
    /// A control character, line separator or bidirectional control.
    #[error("`{name}` holds a control character or a line separator, which no node name has")]
    Control {
        /// The name, escaped, e.g. `gpu1\\nALL`.
        name: String,
    },
    /// `ALL`, in any case.
    #[error("`{name}` names every node of the cluster, not one node")]
    All {
        /// e.g. `all`.
        name: String,
    },
    /// A hostlist or nodeset expression, or white space between names.
    #[error(
        "`{name}` is a hostlist or nodeset expression (`{found}`), which names several nodes, not one"
    )]
    Expression {
        /// e.g. `node[1-4]`.
        name: String,
        /// What makes it one, e.g. `[`.
        found: String,
    },
    /// Starts with `-`: an option to the program it is given to.
    #[error("`{name}` starts with `-`, which a command reads as an option")]
    Option {
        /// e.g. `--all`.
        name: String,
    },
    /// Longer than [`NAME_MAX`] bytes.
    #[error("`{name}…` is {bytes} bytes long; a node name has at most 253")]
    TooLong {
        /// The first characters, e.g. `gpuuuu`.
        name: String,
        /// Its length.
        bytes: usize,
    },
    /// Other characters than Slurm's.
    #[error("`{name}` is not a slurm node name (letters, digits, `.`, `_`, `-`)")]
    Slurm {
        /// e.g. `gpu/1`.
        name: String,
    },
    /// Not an RFC 1123 DNS subdomain.
    #[error(
        "`{name}` is not a kubernetes node name (lowercase letters, digits, `-`, in dot-separated parts of at most 63 that start and end with a letter or digit)"
    )]
    Kubernetes {
        /// e.g. `GPU_1`.
        name: String,
    },
}

impl DrainNodeName {
    /// `text` as one node's name under `rules`, e.g. `gpu07`; `ALL`, `node[1-4]`, `a,b`,
    /// `@gpu`, `-x` and names with a control character or line separator are refused.
    pub fn parse(text: &str, rules: NameRules) -> Result<Self, DrainNameError> {
        let name = || text_value(text);
        if text.is_empty() {
            return Err(DrainNameError::Empty);
        }
        if text.chars().any(crate::text::is_unsafe_in_line) {
            return Err(DrainNameError::Control { name: name() });
        }
        if text.eq_ignore_ascii_case("all") {
            return Err(DrainNameError::All { name: name() });
        }
        if let Some(found) = text
            .chars()
            .find(|c| EXPRESSION.contains(c) || c.is_whitespace())
        {
            return Err(DrainNameError::Expression {
                name: name(),
                found: found.to_string(),
            });
        }
        if text.starts_with('-') {
            return Err(DrainNameError::Option { name: name() });
        }
        if text.len() > NAME_MAX {
            return Err(DrainNameError::TooLong {
                name: text.chars().take(40).collect(),
                bytes: text.len(),
            });
        }
        match rules {
            NameRules::Slurm => {
                let fits = text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
                if !fits {
                    return Err(DrainNameError::Slurm { name: name() });
                }
            }
            NameRules::Kubernetes => {
                if !is_dns_subdomain(text) {
                    return Err(DrainNameError::Kubernetes { name: name() });
                }
            }
        }
        Ok(Self(text.to_string()))
    }

    /// The name, e.g. `gpu07`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// RFC 1123 DNS subdomain as Kubernetes checks a node's name: dot-separated labels of
/// lowercase letters, digits and `-`, each 1 to 63 long, starting and ending with a
/// letter or digit.
fn is_dns_subdomain(text: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    text.len() <= NAME_MAX
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= LABEL_MAX
                && label.chars().all(|c| alnum(c) || c == '-')
                && label.starts_with(alnum)
                && label.ends_with(alnum)
        })
}

/// `--drain-name`: the rules both systems share (Slurm's); [`super::for_host`] checks
/// the name again under the host's drain.
impl std::str::FromStr for DrainNodeName {
    type Err = DrainNameError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text, NameRules::Slurm)
    }
}

impl fmt::Display for DrainNodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A failure's text as a drained node's reason or annotation carries it: its first
/// line (cut at any line break a reader knows), every other control or separator
/// escaped, e.g. `step pip failed`.
pub fn failure_line(failure: &str) -> String {
    let first = failure
        .split(crate::text::is_line_break)
        .next()
        .unwrap_or_default();
    text_value(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// See: issue 33 — a drain name that names the whole cluster (`ALL`) or several nodes
    /// (a Slurm hostlist, a nodeset) or smuggles a line or an option is refused for both
    /// systems, with a reason naming why.
    #[test]
    fn all_hostlists_nodesets_options_and_line_breaks_are_no_node_name() {
        for rules in [NameRules::Slurm, NameRules::Kubernetes] {
            for (text, wanted) in [
                ("ALL", "names every node"),
                ("all", "names every node"),
                ("aLl", "names every node"),
                ("node[1-4]", "hostlist or nodeset expression (`[`)"),
                ("node1,node2", "(`,`)"),
                ("@gpu", "(`@`)"),
                ("node*", "(`*`)"),
                ("node?", "(`?`)"),
                ("gpu^rack1", "(`^`)"),
                ("gpu!node1", "(`!`)"),
                ("gpu&rack1", "(`&`)"),
                ("node1 state=resume", "(` `)"),
                ("x=y", "(`=`)"),
                ("node1\nALL", "`node1\\nALL` holds a control character"),
                ("node1\rx", "control character"),
                ("node1\u{0b}x", "control character"),
                ("node1\u{0c}x", "control character"),
                ("node1\u{1c}x", "control character"),
                ("node1\u{1d}x", "control character"),
                ("node1\u{1e}x", "control character"),
                ("node1\u{85}x", "control character"),
                ("node1\u{2028}x", "control character"),
                ("node1\u{2029}x", "control character"),
                ("node1\u{202e}x", "control character"),
                ("-x", "starts with `-`"),
                ("--all", "starts with `-`"),
                ("", "empty"),
                ("gpu/1", "node name ("),
                ("gpü1", "node name ("),
            ] {
                let error = DrainNodeName::parse(text, rules).unwrap_err().to_string();
                assert!(error.contains(wanted), "{rules:?} {text:?}: {error}");
            }
            let long = "a".repeat(254);
            let error = DrainNodeName::parse(&long, rules).unwrap_err().to_string();
            assert!(error.contains("254 bytes long"), "{error}");
            assert!(DrainNodeName::parse(&"a".repeat(63), rules).is_ok());
        }
    }

    #[test]
    fn slurm_and_kubernetes_take_their_own_names() {
        for text in ["gpu07", "gpu-07.rack1", "node_3", "GPU7", "all1", "x.all"] {
            assert_eq!(
                DrainNodeName::parse(text, NameRules::Slurm)
                    .unwrap()
                    .as_str(),
                text
            );
        }
        for text in ["gpu07", "gpu-07.rack1.cluster", "0", "a.b"] {
            assert!(
                DrainNodeName::parse(text, NameRules::Kubernetes).is_ok(),
                "{text}"
            );
        }
        for text in [
            "node_3",
            "GPU7",
            "gpu-.rack",
            "gpu..rack",
            ".gpu",
            "gpu.",
            &"a".repeat(64),
        ] {
            let error = DrainNodeName::parse(text, NameRules::Kubernetes)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("not a kubernetes node name"),
                "{text}: {error}"
            );
        }
    }

    /// See: issue 33 — a failure's text reaches a Slurm reason or a Kubernetes annotation
    /// as one escaped line, whatever line break or control it holds.
    #[test]
    fn a_failure_becomes_one_escaped_line() {
        for separator in [
            "\n", "\r", "\u{0b}", "\u{0c}", "\u{1c}", "\u{1d}", "\u{1e}", "\u{85}", "\u{2028}",
            "\u{2029}",
        ] {
            assert_eq!(
                failure_line(&format!("step pip failed{separator}Reason=x")),
                "step pip failed"
            );
        }
        assert_eq!(
            failure_line("step \u{1b}[31mpip\u{202e} failed\t!"),
            "step \\u{1b}[31mpip\\u{202e} failed\\t!"
        );
    }
}
