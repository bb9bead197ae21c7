//! `env`: the environment variables of the stack, with a value or read from the
//! environment of the run.

use super::*;

impl Checker {
    pub(super) fn env(&mut self, node: &Node) -> Vec<EnvVar> {
        const KEYS: &[&str] = &["value", "from_env", "secret", "override"];
        let NodeKind::Mapping(entries) = &node.kind else {
            self.error(
                node.span,
                format!(
                    "expected `env` to be a mapping of variable name to value, found {}",
                    node.type_name()
                ),
            );
            return Vec::new();
        };
        let mut vars = Vec::new();
        for (key, value) in entries {
            let name = key.text.clone();
            if !is_variable_name(&name) {
                self.error(key.span, format!("invalid environment variable name `{name}`: expected letters, digits and `_`, not starting with a digit"));
                continue;
            }
            let what = format!("env.{name}");
            let var = match &value.kind {
                NodeKind::Scalar(_) if !value.is_null() => {
                    self.string(value, &what).map(|text| EnvVar {
                        name: name.clone(),
                        value: EnvValue::Literal(text),
                        secret: false,
                        override_existing: false,
                    })
                }
                NodeKind::Mapping(_) => {
                    let Some(mut fields) = self.fields(value, &what, KEYS) else {
                        continue;
                    };
                    let literal_node = fields.take("value");
                    let literal =
                        literal_node.and_then(|n| self.string(n, &format!("{what}.value")));
                    let from_env_node = fields.take("from_env");
                    let from_env = from_env_node.and_then(|n| {
                        let from = self.line(n, &format!("{what}.from_env"))?;
                        if !is_variable_name(&from) {
                            self.error(n.span, format!("invalid `{what}.from_env` `{from}`: expected a variable name (letters, digits and `_`, not starting with a digit)"));
                            return None;
                        }
                        Some(from)
                    });
                    let secret = fields
                        .take("secret")
                        .and_then(|n| self.boolean(n, &format!("{what}.secret")));
                    let override_existing = fields
                        .take("override")
                        .and_then(|n| self.boolean(n, &format!("{what}.override")))
                        .unwrap_or(false);
                    let span = fields.span;
                    self.finish(fields);
                    match (literal, from_env) {
                        (Some(literal), None) => Some(EnvVar {
                            name: name.clone(),
                            value: EnvValue::Literal(literal),
                            secret: secret.unwrap_or(false),
                            override_existing,
                        }),
                        // A value taken from the controller's environment is a secret unless said otherwise.
                        (None, Some(from)) => Some(EnvVar {
                            name: name.clone(),
                            value: EnvValue::FromEnv(from),
                            secret: secret.unwrap_or(true),
                            override_existing,
                        }),
                        (Some(_), Some(_)) => {
                            self.error(
                                span,
                                format!("`{what}` has both `value` and `from_env`: give one"),
                            );
                            None
                        }
                        // A value that was given but is invalid has been reported.
                        (None, None) if literal_node.is_some() || from_env_node.is_some() => None,
                        (None, None) => {
                            self.error(span, format!("missing `value` or `from_env` in `{what}`"));
                            None
                        }
                    }
                }
                _ => {
                    self.error(value.span, format!("expected `{what}` to be a string or a mapping with `value`/`from_env`, found {}", value.type_name()));
                    None
                }
            };
            vars.extend(var);
        }
        vars
    }
}

/// Letters, digits and `_`, not starting with a digit, e.g. `HF_TOKEN`.
pub(crate) fn is_variable_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
