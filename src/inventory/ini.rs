//! Ansible's INI inventory format: `host key=value …` lines, `[group]`,
//! `[group:vars]` and `[group:children]` sections, `#` and `;` comments.

use std::collections::BTreeMap;

use super::{Declared, InventoryError, pattern};

/// Whether `text` is an INI inventory: its first meaningful line is a `[section]` or a
/// host line (`name` or `name key=value`) rather than YAML (`key:`, `---`).
pub fn looks_like_ini(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with(';'))
        .is_some_and(|line| {
            if line.starts_with('[') {
                return true;
            }
            if line.starts_with("---") || line.starts_with('{') {
                return false;
            }
            let first = line.split_whitespace().next().unwrap_or_default();
            !first.ends_with(':')
        })
}

/// `key=value` words of a line, values unquoted (`'…'`, `"…"`).
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for ch in line.chars() {
        match (quote, ch) {
            (Some(open), ch) if ch == open => quote = None,
            (Some(_), ch) => current.push(ch),
            (None, '\'' | '"') => {
                quote = Some(ch);
                any = true;
            }
            (None, ch) if ch.is_whitespace() => {
                if any || !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                    any = false;
                }
            }
            (None, ch) => current.push(ch),
        }
    }
    if quote.is_some() {
        return Err("a quote is not closed".to_string());
    }
    if any || !current.is_empty() {
        words.push(current);
    }
    Ok(words)
}

/// `key=value` → (`key`, `value`).
fn assignment(word: &str) -> Result<(String, String), String> {
    match word.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("`{word}` is not `key=value`")),
    }
}

enum Section {
    Hosts(String),
    Vars(String),
    Children(String),
}

/// Parse an INI inventory.
pub fn parse(text: &str, file: &str) -> Result<Declared, InventoryError> {
    let mut declared = Declared::default();
    let mut section = Section::Hosts("ungrouped".to_string());
    for (index, raw) in text.lines().enumerate() {
        let line_number = index + 1;
        let invalid = |message: String| InventoryError::Invalid {
            file: file.to_string(),
            line: line_number,
            message,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header
                .strip_suffix(']')
                .ok_or_else(|| invalid(format!("`{line}` is not a `[section]` header")))?;
            let (group, kind) = header.split_once(':').unwrap_or((header, ""));
            pattern::check_group_name(group).map_err(invalid)?;
            declared.add_group(group);
            section = match kind {
                "" | "hosts" => Section::Hosts(group.to_string()),
                "vars" => Section::Vars(group.to_string()),
                "children" => Section::Children(group.to_string()),
                other => {
                    return Err(invalid(format!(
                        "`[{group}:{other}]`: a section is `[group]`, `[group:vars]` or `[group:children]`"
                    )));
                }
            };
            continue;
        }
        // A `#` after a space starts a comment, as Ansible reads it.
        let content = match line.find(" #") {
            Some(at) => &line[..at],
            None => line,
        };
        match &section {
            Section::Hosts(group) => {
                let words = words(content).map_err(invalid)?;
                let Some((host, rest)) = words.split_first() else {
                    continue;
                };
                let vars = rest
                    .iter()
                    .map(|word| assignment(word))
                    .collect::<Result<BTreeMap<_, _>, _>>()
                    .map_err(invalid)?;
                for name in pattern::expand_range(host).map_err(invalid)? {
                    declared.add_host(group, &name, vars.clone());
                }
            }
            Section::Vars(group) => {
                let (key, value) = assignment(content).map_err(invalid)?;
                let value = words(&value).map_err(invalid)?.join(" ");
                declared
                    .group_vars
                    .entry(group.clone())
                    .or_default()
                    .insert(key, value);
            }
            Section::Children(group) => {
                pattern::check_group_name(content).map_err(invalid)?;
                declared.add_group(content);
                declared
                    .children
                    .entry(group.clone())
                    .or_default()
                    .insert(content.to_string());
            }
        }
    }
    Ok(declared)
}
