//! Parsers for the node's general facts: free disk space (`df -Pk` per path), the OS
//! release (`/etc/os-release`) and the kernel (`uname -srm`). It does not decide how
//! much space a step needs.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;

/// Free space under one path, e.g. `/usr/local` on `/dev/vda` mounted at `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskSpace {
    /// The path asked about, e.g. `/usr/local`.
    pub path: PathBuf,
    /// The filesystem, e.g. `/dev/vda`.
    pub filesystem: String,
    /// Where it is mounted, e.g. `/`.
    pub mount: PathBuf,
    /// Its size in KiB, e.g. `264212084`.
    pub total_kib: u64,
    /// Free space in KiB for unprivileged users, e.g. `81745044`; volatile, so not part of
    /// the facts' digest.
    pub available_kib: u64,
}

/// `/etc/os-release`, e.g. Ubuntu `24.04`.
///
/// See: <https://www.freedesktop.org/software/systemd/man/latest/os-release.html>
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsRelease {
    /// `ID`, e.g. `ubuntu`.
    pub id: String,
    /// `ID_LIKE`, e.g. `["debian"]`.
    pub id_like: Vec<String>,
    /// `VERSION_ID`, e.g. `24.04`.
    pub version_id: Option<String>,
    /// `PRETTY_NAME`, e.g. `Ubuntu 24.04.3 LTS`.
    pub pretty_name: Option<String>,
}

/// `uname -srm`, e.g. `Linux 6.18.44-fc-v973-gpu x86_64`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    /// The kernel name, e.g. `Linux`.
    pub name: String,
    /// The release, e.g. `6.18.44-fc-v973-gpu`.
    pub release: String,
    /// The machine, e.g. `x86_64`.
    pub machine: String,
}

fn parse_kib(value: &str) -> Result<u64, FactsError> {
    value.parse().map_err(|source| FactsError::InvalidNumber {
        value: value.to_string(),
        source,
    })
}

/// Parses section `disk`: `PATH\t<last line of df -Pk PATH>`, e.g.
/// `/tmp\t/dev/vda 264212084 13540848 81745040 15% /`.
///
/// See: <https://pubs.opengroup.org/onlinepubs/9799919799/utilities/df.html>
pub fn parse_disk(text: &str) -> Result<Vec<DiskSpace>, FactsError> {
    let mut disks = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let invalid = || FactsError::InvalidLine {
            line: index + 1,
            text: line.to_string(),
        };
        let (path, df) = line.split_once('\t').ok_or_else(invalid)?;
        let fields: Vec<&str> = df.split_whitespace().collect();
        if df.trim().is_empty() {
            continue;
        }
        let [filesystem, total, _used, available, _capacity, mount @ ..] = fields.as_slice() else {
            return Err(invalid());
        };
        if mount.is_empty() {
            return Err(invalid());
        }
        disks.push(DiskSpace {
            path: PathBuf::from(path),
            filesystem: (*filesystem).to_string(),
            mount: PathBuf::from(mount.join(" ")),
            total_kib: parse_kib(total).map_err(|error| error.on_line(index + 1, line))?,
            available_kib: parse_kib(available).map_err(|error| error.on_line(index + 1, line))?,
        });
    }
    Ok(disks)
}

/// Parses `/etc/os-release` (`KEY=value`, values optionally quoted).
pub fn parse_os_release(text: &str) -> OsRelease {
    let mut release = OsRelease::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or(value)
            .to_string();
        match key.trim() {
            "ID" => release.id = value,
            "ID_LIKE" => release.id_like = value.split_whitespace().map(str::to_string).collect(),
            "VERSION_ID" => release.version_id = Some(value),
            "PRETTY_NAME" => release.pretty_name = Some(value),
            _ => {}
        }
    }
    release
}

/// Parses `uname -srm`, e.g. `Linux 6.18.44-fc-v973-gpu x86_64`.
pub fn parse_uname(text: &str) -> Option<Kernel> {
    let mut words = text.split_whitespace();
    Some(Kernel {
        name: words.next()?.to_string(),
        release: words.next()?.to_string(),
        machine: words.next()?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::capture_part;

    #[test]
    fn h200_os_release_is_ubuntu_24_04() {
        let os = capture_part("system.txt", "## os", "ldd (Ubuntu");
        let release = parse_os_release(&os);
        assert_eq!(release.id, "ubuntu");
        assert_eq!(release.id_like, vec!["debian"]);
        assert_eq!(release.version_id.as_deref(), Some("24.04"));
        assert_eq!(release.pretty_name.as_deref(), Some("Ubuntu 24.04.3 LTS"));
    }

    #[test]
    fn h200_uname_parses() {
        let kernel = parse_uname("Linux 6.18.44-fc-v973-gpu x86_64\n").unwrap();
        assert_eq!(kernel.machine, "x86_64");
        assert_eq!(parse_uname("Linux\n"), None);
    }

    #[test]
    fn disk_lines_parse() {
        let disks = parse_disk(
            "/\t/dev/vda         264212084 13540844  81745044      15% /\n\
             /mnt/my disk\t/dev/vdb 100 10 90 10% /mnt/my disk\n\
             /gone\t\n",
        )
        .unwrap();
        assert_eq!(disks.len(), 2);
        assert_eq!(disks[0].available_kib, 81745044);
        assert_eq!(disks[1].mount, PathBuf::from("/mnt/my disk"));
        assert!(parse_disk("/\t/dev/vda 1 2\n").is_err());
    }
}
