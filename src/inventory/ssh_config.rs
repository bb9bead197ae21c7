//! The `ssh_config` a fleet run connects with: one `Host` block per inventory host that
//! has its own address, user, port or identity, then the user's own configuration
//! (`--ssh-config`, else `~/.ssh/config`) for everything else. Inventory values reach
//! the file only after they pass the checks below, so none can add a directive.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::InventoryHost;

/// The generated configuration could not be written.
#[derive(Debug, thiserror::Error)]
#[error("Failed to write the run's ssh configuration `{path}`")]
pub struct SshConfigError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// A host name or address `ssh` can take as one word: letters, digits, `.`, `-`, `_`,
/// `:` and `%` (IPv6 and zone ids), not starting with `-` (it would read as an option).
pub fn check_host_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 253
        || name.starts_with('-')
        || !name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '-' | '_' | ':' | '%'))
    {
        return Err(format!(
            "`{}` is not a host name or address (letters, digits, `.`, `-`, `_`, `:`; not starting with `-`)",
            name.escape_default()
        ));
    }
    Ok(())
}

/// A user name as `ssh` takes it: letters, digits, `.`, `_`, `-`, not starting with `-`.
pub fn check_user(user: &str) -> Result<(), String> {
    if user.is_empty()
        || user.len() > 64
        || user.starts_with('-')
        || !user
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-'))
    {
        return Err(format!(
            "user `{}` is not a user name (letters, digits, `.`, `_`, `-`)",
            user.escape_default()
        ));
    }
    Ok(())
}

/// A file path that can stand quoted in an `ssh_config`: no quote, backslash or control
/// character.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty()
        || path
            .chars()
            .any(|ch| ch.is_control() || matches!(ch, '"' | '\\'))
    {
        return Err(format!(
            "identity `{}` is not a usable path (no quotes, backslashes or control characters)",
            path.escape_default()
        ));
    }
    Ok(())
}

/// Write `dir/ssh_config` for `hosts` (see the module's documentation) and return its
/// path; `None` when no host has settings of its own (the user's configuration serves
/// as it is).
pub fn write_ssh_config(
    dir: &Path,
    hosts: &[&InventoryHost],
    base: Option<&Path>,
) -> Result<Option<PathBuf>, SshConfigError> {
    let own: Vec<&&InventoryHost> = hosts
        .iter()
        .filter(|host| {
            host.address.is_some()
                || host.user.is_some()
                || host.port.is_some()
                || host.identity.is_some()
        })
        .collect();
    if own.is_empty() {
        return Ok(None);
    }
    let mut text = String::from(
        "# The connection settings of this run's inventory hosts, then the user's ssh configuration.\n",
    );
    for host in own {
        let _ = writeln!(text, "Host {}", host.name);
        if let Some(address) = &host.address {
            let _ = writeln!(text, "    HostName {address}");
        }
        if let Some(user) = &host.user {
            let _ = writeln!(text, "    User {user}");
        }
        if let Some(port) = host.port {
            let _ = writeln!(text, "    Port {port}");
        }
        if let Some(identity) = &host.identity {
            // `%` starts a token in IdentityFile; `%%` is a literal one.
            let path = identity.display().to_string().replace('%', "%%");
            let _ = writeln!(text, "    IdentityFile \"{path}\"");
        }
    }
    let home_config = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".ssh/config"));
    let include = base
        .map(Path::to_path_buf)
        .or(home_config.filter(|path| path.is_file()));
    if let Some(include) = include {
        let absolute = std::path::absolute(&include).unwrap_or(include);
        let path = absolute.display().to_string();
        if check_path(&path).is_ok() {
            let _ = writeln!(text, "Match all\nInclude \"{path}\"");
        }
    }
    let path = dir.join("ssh_config");
    let write_error = |source| SshConfigError {
        path: path.clone(),
        source,
    };
    fs_err::create_dir_all(dir).map_err(write_error)?;
    fs_err::write(&path, text).map_err(write_error)?;
    Ok(Some(path))
}
