//! Ansible's YAML inventory format (also the project's own): top-level keys are groups
//! (usually just `all`), each with `hosts`, `vars` and `children`.

use std::collections::BTreeMap;

use crate::manifest::yaml::{self, Node, NodeKind};

use super::{Declared, InventoryError, pattern};

struct Reader<'a> {
    file: &'a str,
    declared: Declared,
}

impl Reader<'_> {
    fn invalid(&self, node: &Node, message: impl Into<String>) -> InventoryError {
        InventoryError::Invalid {
            file: self.file.to_string(),
            line: node.span.line,
            message: message.into(),
        }
    }

    fn mapping<'n>(
        &self,
        node: &'n Node,
        what: &str,
    ) -> Result<Vec<(&'n str, &'n Node)>, InventoryError> {
        match &node.kind {
            NodeKind::Mapping(entries) => Ok(entries
                .iter()
                .map(|(key, value)| (key.text.as_str(), value))
                .collect()),
            _ if node.is_null() => Ok(Vec::new()),
            _ => Err(self.invalid(
                node,
                format!("{what} must be a mapping, not {}", node.type_name()),
            )),
        }
    }

    fn vars(&self, node: &Node, what: &str) -> Result<BTreeMap<String, String>, InventoryError> {
        self.mapping(node, what)?
            .into_iter()
            .map(|(key, value)| Ok((key.to_string(), text(value))))
            .collect()
    }

    fn group(&mut self, name: &str, body: &Node, depth: usize) -> Result<(), InventoryError> {
        if depth > 64 {
            return Err(self.invalid(body, format!("groups nest more than 64 deep at `{name}`")));
        }
        pattern::check_group_name(name).map_err(|message| self.invalid(body, message))?;
        self.declared.add_group(name);
        for (key, value) in self.mapping(body, &format!("group `{name}`"))? {
            match key {
                "hosts" => {
                    for (host, vars) in self.mapping(value, &format!("`{name}.hosts`"))? {
                        let vars = self.vars(vars, &format!("host `{host}`"))?;
                        let names = pattern::expand_range(host)
                            .map_err(|message| self.invalid(value, message))?;
                        for host in names {
                            self.declared.add_host(name, &host, vars.clone());
                        }
                    }
                }
                "vars" => {
                    let vars = self.vars(value, &format!("`{name}.vars`"))?;
                    self.declared
                        .group_vars
                        .entry(name.to_string())
                        .or_default()
                        .extend(vars);
                }
                "children" => {
                    for (child, child_body) in self.mapping(value, &format!("`{name}.children`"))? {
                        self.declared
                            .children
                            .entry(name.to_string())
                            .or_default()
                            .insert(child.to_string());
                        self.group(child, child_body, depth + 1)?;
                    }
                }
                other => {
                    return Err(self.invalid(
                        value,
                        format!("group `{name}` has `{other}`; a group holds `hosts`, `vars` and `children`"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A variable's value as text: a scalar as written, anything else as JSON.
fn text(node: &Node) -> String {
    fn json(node: &Node) -> serde_json::Value {
        match &node.kind {
            NodeKind::Scalar(scalar) => serde_json::Value::String(scalar.text.clone()),
            NodeKind::Sequence(items) => items.iter().map(json).collect(),
            NodeKind::Mapping(entries) => entries
                .iter()
                .map(|(key, value)| (key.text.clone(), json(value)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
    match &node.kind {
        NodeKind::Scalar(scalar) => scalar.text.clone(),
        _ => json(node).to_string(),
    }
}

/// Parse a YAML inventory.
pub fn parse(source: &str, file: &str) -> Result<Declared, InventoryError> {
    let (root, problems) = yaml::parse(source);
    if let Some(problem) = problems.first() {
        return Err(InventoryError::Invalid {
            file: file.to_string(),
            line: problem.span.line,
            message: problem.message.clone(),
        });
    }
    let mut reader = Reader {
        file,
        declared: Declared::default(),
    };
    let Some(root) = root else {
        return Err(InventoryError::Invalid {
            file: file.to_string(),
            line: 0,
            message: "the inventory is empty".to_string(),
        });
    };
    for (group, body) in reader.mapping(&root, "an inventory")? {
        reader.group(group, body, 0)?;
    }
    Ok(reader.declared)
}
