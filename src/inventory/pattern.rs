//! Host patterns: Ansible's host ranges (`node[00:15]`, `rack-[a:d]`) and `--limit`
//! (`gpu`, `node1*`, `~node[0-3]$`, `a,b`, `gpu:&rack1`, `gpu:!node7`).

use std::collections::BTreeSet;

use super::{Inventory, InventoryError, InventoryHost, MAX_HOSTS};

/// A group name as Ansible allows it: letters, digits, `_` and `-` (no spaces or colons).
pub fn check_group_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 255
        || !name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '-' | '.'))
    {
        return Err(format!(
            "group name `{}` may hold only letters, digits, `_`, `-` and `.`",
            name.escape_default()
        ));
    }
    Ok(())
}

/// Expand `node[0:3]` to `node0 … node3` (numeric ranges keep leading zeros:
/// `[01:10]`; letters: `[a:c]`; a step: `[0:10:2]`). A name without a range is itself.
pub fn expand_range(name: &str) -> Result<Vec<String>, String> {
    let Some(open) = name.find('[') else {
        return Ok(vec![name.to_string()]);
    };
    let close = name[open..]
        .find(']')
        .map(|at| open + at)
        .ok_or_else(|| format!("`{name}`: a `[` range is not closed"))?;
    let (head, inner, tail) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    let parts: Vec<&str> = inner.split(':').collect();
    let (start, end, step) = match parts.as_slice() {
        [start, end] => (*start, *end, 1),
        [start, end, step] => (
            *start,
            *end,
            step.parse::<usize>()
                .ok()
                .filter(|step| *step > 0)
                .ok_or_else(|| format!("`{name}`: the step `{step}` is not a positive number"))?,
        ),
        _ => {
            return Err(format!(
                "`{name}`: a range is `[start:end]` or `[start:end:step]`"
            ));
        }
    };
    let items: Vec<String> =
        if let (Ok(first), Ok(last)) = (start.parse::<u64>(), end.parse::<u64>()) {
            if first > last {
                return Err(format!("`{name}`: the range starts after it ends"));
            }
            if (last - first) as usize / step >= MAX_HOSTS {
                return Err(format!("`{name}`: more than {MAX_HOSTS} hosts"));
            }
            let width = if start.len() > 1 && start.starts_with('0') {
                start.len()
            } else {
                0
            };
            (first..=last)
                .step_by(step)
                .map(|number| format!("{number:0width$}"))
                .collect()
        } else {
            match (single_letter(start), single_letter(end)) {
                (Some(first), Some(last)) if first <= last => (first..=last)
                    .step_by(step)
                    .map(|letter| letter.to_string())
                    .collect(),
                _ => {
                    return Err(format!(
                        "`{name}`: a range runs between two numbers or two letters"
                    ));
                }
            }
        };
    let rest = expand_range(tail)?;
    if items.len().saturating_mul(rest.len()) > MAX_HOSTS {
        return Err(format!("`{name}`: more than {MAX_HOSTS} hosts"));
    }
    Ok(items
        .iter()
        .flat_map(|item| rest.iter().map(move |rest| format!("{head}{item}{rest}")))
        .collect())
}

fn single_letter(text: &str) -> Option<char> {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(letter), None) if letter.is_ascii_alphabetic() => Some(letter),
        _ => None,
    }
}

/// Whether `text` matches the shell-style `glob` (`*` any run, `?` one character).
fn glob(glob: &str, text: &str) -> bool {
    let (glob, text): (Vec<char>, Vec<char>) = (glob.chars().collect(), text.chars().collect());
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if g < glob.len() && (glob[g] == '?' || glob[g] == text[t]) {
            g += 1;
            t += 1;
        } else if g < glob.len() && glob[g] == '*' {
            star = Some((g, t));
            g += 1;
        } else if let Some((star_g, star_t)) = star {
            g = star_g + 1;
            t = star_t + 1;
            star = Some((star_g, star_t + 1));
        } else {
            return false;
        }
    }
    glob[g..].iter().all(|ch| *ch == '*')
}

/// The hosts one term names: a group, a host, a glob over both, or `~regex` over hosts.
fn term_hosts(inventory: &Inventory, term: &str) -> Result<BTreeSet<String>, String> {
    if let Some(expression) = term.strip_prefix('~') {
        let regex = regex::Regex::new(expression)
            .map_err(|error| format!("`{term}` is not a regular expression: {error}"))?;
        return Ok(inventory
            .hosts
            .iter()
            .filter(|host| regex.is_match(&host.name))
            .map(|host| host.name.clone())
            .collect());
    }
    let term = if term == "*" { "all" } else { term };
    let mut names = BTreeSet::new();
    for (group, members) in &inventory.groups {
        if glob(term, group) {
            names.extend(members.iter().cloned());
        }
    }
    for host in &inventory.hosts {
        if glob(term, &host.name) {
            names.insert(host.name.clone());
        }
    }
    Ok(names)
}

/// The inventory's hosts that `limit` selects (all without one), in inventory order.
/// Terms are separated by `,` or `:`; `&term` intersects and `!term` excludes, after
/// every plain term is added, as Ansible applies them.
pub fn select<'a>(
    inventory: &'a Inventory,
    limit: Option<&str>,
) -> Result<Vec<&'a InventoryHost>, InventoryError> {
    let no_match = |limit: &str| InventoryError::NoMatch {
        limit: limit.to_string(),
        known: inventory
            .groups
            .keys()
            .chain(inventory.hosts.iter().map(|host| &host.name))
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
    };
    let Some(limit) = limit else {
        return Ok(inventory.hosts.iter().collect());
    };
    let invalid = |message: String| InventoryError::Invalid {
        file: "--limit".to_string(),
        line: 0,
        message,
    };
    let mut selected: BTreeSet<String> = BTreeSet::new();
    let mut intersect: Vec<BTreeSet<String>> = Vec::new();
    let mut exclude: BTreeSet<String> = BTreeSet::new();
    let terms: Vec<&str> = if limit.starts_with('~') {
        vec![limit]
    } else {
        limit
            .split([',', ':'])
            .map(str::trim)
            .filter(|term| !term.is_empty())
            .collect()
    };
    for term in terms {
        if let Some(term) = term.strip_prefix('!') {
            exclude.extend(term_hosts(inventory, term).map_err(invalid)?);
        } else if let Some(term) = term.strip_prefix('&') {
            intersect.push(term_hosts(inventory, term).map_err(invalid)?);
        } else {
            let hosts = term_hosts(inventory, term).map_err(invalid)?;
            if hosts.is_empty() {
                return Err(no_match(term));
            }
            selected.extend(hosts);
        }
    }
    if selected.is_empty() && (!intersect.is_empty() || !exclude.is_empty()) {
        selected = inventory
            .hosts
            .iter()
            .map(|host| host.name.clone())
            .collect();
    }
    for set in &intersect {
        selected.retain(|name| set.contains(name));
    }
    selected.retain(|name| !exclude.contains(name));
    let hosts: Vec<&InventoryHost> = inventory
        .hosts
        .iter()
        .filter(|host| selected.contains(&host.name))
        .collect();
    if hosts.is_empty() {
        return Err(no_match(limit));
    }
    Ok(hosts)
}
