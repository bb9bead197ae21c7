//! Inventories: which nodes a fleet verb works on, and how to reach each one.
//!
//! Reads the project's YAML inventory, which is Ansible's YAML inventory format
//! (`all: {hosts: …, children: …, vars: …}`), and Ansible's INI inventories, unchanged.
//! A host's connection settings come from its variables, group variables applying
//! from `all` down to the host's own groups and the host's own last:
//!
//! | setting | variables read (first found) |
//! | --- | --- |
//! | address | `address`, `ansible_host`, `ansible_ssh_host` |
//! | user | `user`, `ansible_user`, `ansible_ssh_user` |
//! | port | `port`, `ansible_port`, `ansible_ssh_port` |
//! | identity file | `identity`, `ansible_ssh_private_key_file` |
//! | target interpreter | `python` (Ansible's `ansible_python_interpreter` is the interpreter its modules run with, not the ML environment, and is not read) |
//!
//! Every other variable is kept; the manifest's `from_env` values are looked up in a
//! host's variables before the controller's environment. A host name without an
//! address is passed to `ssh` as is, so `~/.ssh/config` aliases work.

mod ini;
mod pattern;
mod ssh_config;
mod yaml;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use pattern::{expand_range, select};
pub use ssh_config::{SshConfigError, write_ssh_config};

/// The largest inventory file read, like a manifest's bound.
pub const MAX_INVENTORY_BYTES: u64 = 16 * 1024 * 1024;

/// The most hosts one inventory may name (after ranges are expanded).
pub const MAX_HOSTS: usize = 100_000;

/// An inventory could not be read or is invalid.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// The file could not be read.
    #[error("Failed to read the inventory `{path}`")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_INVENTORY_BYTES`].
    #[error("The inventory `{path}` is {size} bytes; at most {MAX_INVENTORY_BYTES} are read")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// Something in the file is wrong, e.g. `inventory.yml:4:7: port \`x\` is not a number`.
    #[error("{file}:{line}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// The line, from 1 (0: the whole file).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// `--limit` selects no host.
    #[error("`--limit {limit}` matches no host of the inventory (hosts: {known})")]
    NoMatch {
        /// The pattern.
        limit: String,
        /// Some host and group names, for the reader.
        known: String,
    },
}

/// One host of an inventory, e.g. `node3` at `10.0.0.13` as `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryHost {
    /// The inventory name, e.g. `node3` (an `ssh_config` alias when no address is given).
    pub name: String,
    /// Where to connect, e.g. `10.0.0.13`.
    pub address: Option<String>,
    /// The SSH user.
    pub user: Option<String>,
    /// The SSH port.
    pub port: Option<u16>,
    /// The SSH identity file.
    pub identity: Option<PathBuf>,
    /// The target interpreter on this host, overriding the manifest's `target.python`.
    pub python: Option<PathBuf>,
    /// Every variable, merged from `all` down to the host.
    pub vars: BTreeMap<String, String>,
    /// The groups the host belongs to, directly or through children (`all` included).
    pub groups: BTreeSet<String>,
}

/// An inventory: its hosts in the order the file names them, and its groups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// The hosts, each once.
    pub hosts: Vec<InventoryHost>,
    /// Group name → the hosts in it (through children too), `all` and `ungrouped` included.
    pub groups: BTreeMap<String, BTreeSet<String>>,
}

/// Hosts and groups as a file declares them, before variables are merged.
#[derive(Debug, Default)]
pub(crate) struct Declared {
    /// Host names in the order first seen.
    pub hosts: Vec<String>,
    /// Host → its own variables (later declarations add to earlier ones).
    pub host_vars: BTreeMap<String, BTreeMap<String, String>>,
    /// Group → its direct hosts.
    pub group_hosts: BTreeMap<String, BTreeSet<String>>,
    /// Group → its child groups.
    pub children: BTreeMap<String, BTreeSet<String>>,
    /// Group → its variables.
    pub group_vars: BTreeMap<String, BTreeMap<String, String>>,
    /// Group names in the order first seen (parents before children where the file
    /// nests them).
    pub group_order: Vec<String>,
}

impl Declared {
    /// Note a host (once) with variables, in `group`.
    pub fn add_host(&mut self, group: &str, name: &str, vars: BTreeMap<String, String>) {
        if !self.host_vars.contains_key(name) {
            self.hosts.push(name.to_string());
        }
        self.host_vars
            .entry(name.to_string())
            .or_default()
            .extend(vars);
        self.add_group(group);
        self.group_hosts
            .entry(group.to_string())
            .or_default()
            .insert(name.to_string());
    }

    /// Note a group (once).
    pub fn add_group(&mut self, group: &str) {
        if !self.group_order.iter().any(|known| known == group) {
            self.group_order.push(group.to_string());
        }
    }
}

/// Read an inventory file: INI when it is not YAML-shaped (a `[group]` header or a
/// `host key=value` line), YAML otherwise.
pub fn load(path: &Path) -> Result<Inventory, InventoryError> {
    let read_error = |source| InventoryError::Read {
        path: path.to_path_buf(),
        source,
    };
    let size = fs_err::metadata(path).map_err(read_error)?.len();
    if size > MAX_INVENTORY_BYTES {
        return Err(InventoryError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    let bytes = fs_err::read(path).map_err(read_error)?;
    let file = path.display().to_string();
    let text = String::from_utf8(bytes).map_err(|_| InventoryError::Invalid {
        file: file.clone(),
        line: 0,
        message: "the inventory is not UTF-8 text".to_string(),
    })?;
    parse(&text, &file)
}

/// Parse an inventory's text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Inventory, InventoryError> {
    let declared = if ini::looks_like_ini(text) {
        ini::parse(text, file)?
    } else {
        yaml::parse(text, file)?
    };
    build(declared, file)
}

/// Merge variables (all → groups from the outside in → host) and check every host's
/// connection settings.
fn build(declared: Declared, file: &str) -> Result<Inventory, InventoryError> {
    let invalid = |message: String| InventoryError::Invalid {
        file: file.to_string(),
        line: 0,
        message,
    };
    if declared.hosts.len() > MAX_HOSTS {
        return Err(invalid(format!(
            "{} hosts; an inventory holds at most {MAX_HOSTS}",
            declared.hosts.len()
        )));
    }
    // Group → every host in it, through children (cycles are an error).
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for group in &declared.group_order {
        let mut members = BTreeSet::new();
        let mut path = Vec::new();
        collect_members(&declared, group, &mut members, &mut path).map_err(invalid)?;
        groups.insert(group.clone(), members);
    }
    let all: BTreeSet<String> = declared.hosts.iter().cloned().collect();
    let grouped: BTreeSet<String> = declared
        .group_hosts
        .iter()
        .filter(|(group, _)| !matches!(group.as_str(), "all" | "ungrouped"))
        .flat_map(|(_, hosts)| hosts.iter().cloned())
        .collect();
    groups.insert(
        "ungrouped".to_string(),
        all.difference(&grouped).cloned().collect(),
    );
    groups.insert("all".to_string(), all);
    // Depth of each group below `all`, so outer groups' variables apply first.
    let depth = group_depths(&declared);
    let mut hosts = Vec::with_capacity(declared.hosts.len());
    for name in &declared.hosts {
        let mut member_of: Vec<&String> = groups
            .iter()
            .filter(|(_, members)| members.contains(name))
            .map(|(group, _)| group)
            .collect();
        member_of.sort_by_key(|group| (depth.get(*group).copied().unwrap_or(1), *group));
        let mut vars = BTreeMap::new();
        for group in &member_of {
            if let Some(group_vars) = declared.group_vars.get(*group) {
                merge(&mut vars, group_vars);
            }
        }
        if let Some(own) = declared.host_vars.get(name) {
            merge(&mut vars, own);
        }
        let host = host_settings(name, vars, member_of.into_iter().cloned().collect())
            .map_err(|message| invalid(format!("host `{name}`: {message}")))?;
        hosts.push(host);
    }
    Ok(Inventory { hosts, groups })
}

fn collect_members(
    declared: &Declared,
    group: &str,
    members: &mut BTreeSet<String>,
    path: &mut Vec<String>,
) -> Result<(), String> {
    if path.iter().any(|seen| seen == group) {
        return Err(format!(
            "group `{group}` contains itself ({} → {group})",
            path.join(" → ")
        ));
    }
    if path.len() > 64 {
        return Err(format!("groups nest more than 64 deep at `{group}`"));
    }
    path.push(group.to_string());
    if let Some(hosts) = declared.group_hosts.get(group) {
        members.extend(hosts.iter().cloned());
    }
    if let Some(children) = declared.children.get(group) {
        for child in children {
            collect_members(declared, child, members, path)?;
        }
    }
    path.pop();
    Ok(())
}

/// How far below `all` each group sits (`all` 0, its children 1, …); a group reached
/// several ways takes its deepest place, as Ansible orders group variables.
fn group_depths(declared: &Declared) -> BTreeMap<String, usize> {
    let mut depth: BTreeMap<String, usize> = BTreeMap::new();
    depth.insert("all".to_string(), 0);
    for group in &declared.group_order {
        depth.entry(group.clone()).or_insert(1);
    }
    // Relax along parent → child edges; bounded by the number of groups (no cycles
    // reach here).
    for _ in 0..declared.group_order.len().max(1) {
        let mut changed = false;
        for (parent, children) in &declared.children {
            let parent_depth = depth.get(parent).copied().unwrap_or(1);
            for child in children {
                let entry = depth.entry(child.clone()).or_insert(1);
                if *entry < parent_depth + 1 {
                    *entry = parent_depth + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    depth
}

/// The variables each setting is read from, in order (see the module's documentation).
const SETTINGS: [&[&str]; 4] = [
    &["address", "ansible_host", "ansible_ssh_host"],
    &["user", "ansible_user", "ansible_ssh_user"],
    &["port", "ansible_port", "ansible_ssh_port"],
    &["identity", "ansible_ssh_private_key_file"],
];

/// Lay a closer level's variables over `vars`: a setting it names under any of its
/// names replaces the setting from farther levels, whichever name those used.
fn merge(vars: &mut BTreeMap<String, String>, level: &BTreeMap<String, String>) {
    for names in SETTINGS {
        if names.iter().any(|name| level.contains_key(*name)) {
            for name in names {
                vars.remove(*name);
            }
        }
    }
    vars.extend(
        level
            .iter()
            .map(|(key, value)| (key.clone(), value.clone())),
    );
}

/// The first of `names` that `vars` has.
fn first<'a>(vars: &'a BTreeMap<String, String>, names: &[&str]) -> Option<&'a String> {
    names.iter().find_map(|name| vars.get(*name))
}

/// Read a host's connection settings from its merged variables, checking each.
fn host_settings(
    name: &str,
    vars: BTreeMap<String, String>,
    groups: BTreeSet<String>,
) -> Result<InventoryHost, String> {
    ssh_config::check_host_name(name)?;
    let address = first(&vars, SETTINGS[0]).cloned();
    if let Some(address) = &address {
        ssh_config::check_host_name(address).map_err(|message| format!("address: {message}"))?;
    }
    let user = first(&vars, SETTINGS[1]).cloned();
    if let Some(user) = &user {
        ssh_config::check_user(user)?;
    }
    let port = match first(&vars, SETTINGS[2]) {
        Some(port) => Some(
            port.parse::<u16>()
                .ok()
                .filter(|port| *port > 0)
                .ok_or_else(|| format!("port `{port}` is not a port number (1 to 65535)"))?,
        ),
        None => None,
    };
    let identity = first(&vars, SETTINGS[3])
        .map(|path| ssh_config::check_path(path).map(|()| expand_home(path)))
        .transpose()?;
    let python = vars
        .get("python")
        .map(|path| {
            if path.starts_with('/') && !path.contains(['\n', '\r', '\0']) {
                Ok(PathBuf::from(path))
            } else {
                Err(format!("python `{path}` is not an absolute path"))
            }
        })
        .transpose()?;
    Ok(InventoryHost {
        name: name.to_string(),
        address,
        user,
        port,
        identity,
        python,
        vars,
        groups,
    })
}

/// `~/x` → `$HOME/x`, as Ansible expands a key file's path.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests;
