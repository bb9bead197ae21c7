//! Reading a rule file: YAML with a `schema` field, parsed with line and column in errors,
//! and the line of each row, so that a check of a row (or of rows of several files
//! layered over one another) names the `file:line` it was written at.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use serde::de::DeserializeOwned;

use super::error::RulesError;
use crate::manifest::yaml::{self, Node, NodeKind};

/// The only rule-file schema this build reads.
const RULES_SCHEMA: u32 = 1;

/// A rule file's top level: it says its schema.
pub(super) trait RuleFile: DeserializeOwned {
    /// The file's `schema`, e.g. `1`.
    fn schema(&self) -> u32;
}

/// Where a row was written, e.g. `site-rules/cuda-driver.yaml:17`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct At {
    /// The file as named in errors.
    pub file: String,
    /// From 1.
    pub line: usize,
}

impl At {
    /// The error of an unusable entry written here.
    pub fn invalid(&self, message: impl Into<String>) -> RulesError {
        RulesError::Invalid {
            file: self.file.clone(),
            line: self.line,
            message: message.into(),
        }
    }
}

/// A parsed rule file with the lines of its rows.
pub(super) struct Parsed<T> {
    /// The file's content.
    pub value: T,
    /// The file as named in errors.
    file: String,
    /// The YAML tree, for lines; `None` when the tree reader refused what serde read.
    root: Option<Node>,
}

impl<T> Parsed<T> {
    /// Where `section` is written, e.g. the line of `apt:`; line 1 when not found.
    pub fn section(&self, section: &str) -> At {
        let line = self.entry(section).map_or(1, |(key_line, _)| key_line);
        At {
            file: self.file.clone(),
            line,
        }
    }

    /// Where row `index` of the sequence `section` is written, e.g. `updates[3]`.
    pub fn row(&self, section: &str, index: usize) -> At {
        let line = match self.entry(section) {
            Some((key_line, node)) => match &node.kind {
                NodeKind::Sequence(items) => {
                    items.get(index).map_or(key_line, |item| item.span.line)
                }
                _ => key_line,
            },
            None => 1,
        };
        At {
            file: self.file.clone(),
            line,
        }
    }

    /// The rows of `section`, each with where it was written.
    pub fn rows<R>(&self, section: &str, rows: Vec<R>) -> Vec<(R, At)> {
        rows.into_iter()
            .enumerate()
            .map(|(index, row)| (row, self.row(section, index)))
            .collect()
    }

    fn entry(&self, section: &str) -> Option<(usize, &Node)> {
        match &self.root.as_ref()?.kind {
            NodeKind::Mapping(entries) => entries
                .iter()
                .find(|(key, _)| key.text == section)
                .map(|(key, node)| (key.span.line, node)),
            _ => None,
        }
    }
}

/// Parse a rule file's text; `file` names it in errors, e.g. `manifests/rules/abi-pins.yaml`.
pub(super) fn parse<T: RuleFile>(text: &str, file: &str) -> Result<Parsed<T>, RulesError> {
    let value: T = serde_yaml_ng::from_str(text).map_err(|error| {
        let (line, column) = error
            .location()
            .map_or((1, 1), |location| (location.line(), location.column()));
        let message = error.to_string();
        // The location is said once, in front.
        let message = match message.rfind(" at line ") {
            Some(at) => message[..at].to_string(),
            None => message,
        };
        RulesError::Parse {
            file: file.to_string(),
            line,
            column,
            message,
        }
    })?;
    let (root, _) = yaml::parse(text);
    let parsed = Parsed {
        value,
        file: file.to_string(),
        root,
    };
    if parsed.value.schema() != RULES_SCHEMA {
        return Err(parsed.section("schema").invalid(format!(
            "unsupported schema `{}`: this build reads schema {RULES_SCHEMA}",
            parsed.value.schema()
        )));
    }
    Ok(parsed)
}

/// Lay `over`'s rows over `base`: a row whose key a row of `base` has replaces it in
/// place; the others are added, after `base`'s rows or, where `first`, before them (where
/// the first matching row decides, a user's row then wins).
pub(super) fn layer<R, K: Eq + Hash>(
    base: &mut Vec<(R, At)>,
    over: Vec<(R, At)>,
    key: impl Fn(&R) -> K,
    first: bool,
) {
    let at: HashMap<K, usize> = base
        .iter()
        .enumerate()
        .map(|(index, row)| (key(&row.0), index))
        .collect();
    let mut added = Vec::new();
    for row in over {
        match at.get(&key(&row.0)) {
            Some(index) => base[*index] = row,
            None => added.push(row),
        }
    }
    if first {
        added.append(base);
        *base = added;
    } else {
        base.append(&mut added);
    }
}

/// The first row whose key an earlier row of the same file has, e.g. a toolkit listed
/// twice.
pub(super) fn duplicate<R, K: Eq + Hash>(
    rows: &[(R, At)],
    key: impl Fn(&R) -> K,
) -> Option<&(R, At)> {
    let mut seen = HashSet::new();
    rows.iter().find(|row| !seen.insert(key(&row.0)))
}
