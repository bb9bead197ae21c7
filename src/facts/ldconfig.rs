//! Parsers for the dynamic loader's view: `ldconfig -p` lines, the real files those
//! lines point to (their names carry full versions, e.g. `libcudnn.so.9.14.0`), and the
//! `/etc/ld.so.conf.d/*` files. It does not write loader configuration (a step does).
//!
//! See: <https://man7.org/linux/man-pages/man8/ldconfig.8.html>

use std::path::{Path, PathBuf};

use pep440_rs::Version;
use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;

/// One line of `ldconfig -p`, e.g. `libnvrtc.so.13 (libc6,x86-64) =>
/// /usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LdconfigEntry {
    /// The name programs ask for, e.g. `libnvrtc.so.13`.
    pub soname: String,
    /// The cache's flags, e.g. `["libc6", "x86-64"]`.
    pub flags: Vec<String>,
    /// Where the loader finds it, e.g. `/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13`.
    pub path: PathBuf,
}

/// A cached path and the real file behind its symlinks, e.g.
/// `/lib/x86_64-linux-gnu/libcudnn.so.9` → `/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryFile {
    /// The path in the cache, e.g. `/lib/x86_64-linux-gnu/libcudnn.so.9`.
    pub path: PathBuf,
    /// The resolved file, e.g. `/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0`.
    pub real_path: PathBuf,
}

/// One loader configuration file, e.g. `/etc/ld.so.conf.d/987_cuda-13.conf` with
/// `["/usr/local/cuda-13/targets/x86_64-linux/lib"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LdSoConfFile {
    /// The file, e.g. `/etc/ld.so.conf.d/987_cuda-13.conf`.
    pub path: PathBuf,
    /// Its lines as written (bounded by the probe), comments included.
    pub lines: Vec<String>,
}

/// A cuDNN the loader can find by soname, e.g. `9.14.0` in `/usr/lib/x86_64-linux-gnu`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudnnLibrary {
    /// The directory of the real file, e.g. `/usr/lib/x86_64-linux-gnu`.
    pub directory: PathBuf,
    /// The version in the file name, e.g. `9.14.0` from `libcudnn.so.9.14.0`.
    pub version: Version,
    /// The path in the loader cache, e.g. `/lib/x86_64-linux-gnu/libcudnn.so.9`.
    pub cached_path: PathBuf,
}

/// What the loader resolves: cache entries, their real files and the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LdconfigFacts {
    /// `ldconfig -p` lines for the expected libraries and CUDA's, in cache order.
    pub entries: Vec<LdconfigEntry>,
    /// The real file behind each entry's path.
    pub files: Vec<LibraryFile>,
    /// `/etc/ld.so.conf` and `/etc/ld.so.conf.d/*`.
    pub conf_files: Vec<LdSoConfFile>,
    /// The directories the probe was asked about with their real paths, e.g.
    /// `/usr/local/cuda/targets/x86_64-linux/lib` → `/usr/local/cuda-13.0/targets/x86_64-linux/lib`.
    #[serde(default)]
    pub directories: Vec<LibraryFile>,
}

impl LdconfigFacts {
    /// Where the loader finds `soname`, e.g. `libnvrtc.so.13` →
    /// `/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13`: the first entry in
    /// cache order, as `ld.so` picks it.
    pub fn resolve(&self, soname: &str) -> Option<&Path> {
        self.entries
            .iter()
            .find(|entry| entry.soname == soname)
            .map(|entry| entry.path.as_path())
    }

    /// The real file behind a cached path, e.g. `…/libcudnn.so.9` → `…/libcudnn.so.9.14.0`.
    pub fn real_path(&self, path: &Path) -> Option<&Path> {
        self.files
            .iter()
            .find(|file| file.path == path)
            .map(|file| file.real_path.as_path())
    }

    /// The real directory of the file the loader loads for `soname`, e.g.
    /// `libnvrtc.so.13` found as `/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13`
    /// → `/usr/local/cuda-13.0/targets/x86_64-linux/lib` (its real file's directory).
    pub fn loaded_from(&self, soname: &str) -> Option<&Path> {
        let path = self.resolve(soname)?;
        self.real_path(path).unwrap_or(path).parent()
    }

    /// The real path of a directory the probe was asked about (itself when unknown).
    pub fn real_directory<'a>(&'a self, directory: &'a Path) -> &'a Path {
        self.directories
            .iter()
            .find(|known| known.path == directory && !known.real_path.as_os_str().is_empty())
            .map_or(directory, |known| known.real_path.as_path())
    }

    /// The sonames of `expected` whose loaded file does not lie in one of `directories`,
    /// both sides compared by real path. The one judgement of `ldconfig.expect`, made
    /// the same way when planning and after applying.
    pub fn unresolved<'a>(&self, expected: &'a [String], directories: &[PathBuf]) -> Vec<&'a str> {
        let wanted: Vec<&Path> = directories
            .iter()
            .map(|directory| self.real_directory(directory))
            .collect();
        expected
            .iter()
            .filter(|soname| {
                self.loaded_from(soname)
                    .is_none_or(|found| !wanted.contains(&found))
            })
            .map(String::as_str)
            .collect()
    }

    /// Every cuDNN the cache offers, one per directory of real files, read from
    /// `libcudnn.so.MAJOR.MINOR.PATCH` file names.
    ///
    /// See: <https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html>
    pub fn cudnn_libraries(&self) -> Vec<CudnnLibrary> {
        let mut libraries: Vec<CudnnLibrary> = Vec::new();
        for entry in self
            .entries
            .iter()
            .filter(|entry| entry.soname.starts_with("libcudnn.so."))
        {
            let real_path = self.real_path(&entry.path).unwrap_or(&entry.path);
            let Some(version) = real_path
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(|name| name.strip_prefix("libcudnn.so."))
                .filter(|version| version.matches('.').count() >= 2)
                .and_then(|version| version.parse::<Version>().ok())
            else {
                continue;
            };
            let directory = real_path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            if libraries
                .iter()
                .any(|library| library.directory == directory)
            {
                continue;
            }
            libraries.push(CudnnLibrary {
                directory,
                version,
                cached_path: entry.path.clone(),
            });
        }
        libraries
    }
}

/// Parses `ldconfig -p` output (whole or filtered); skips its header and footer lines.
pub fn parse_ldconfig(text: &str) -> Result<Vec<LdconfigEntry>, FactsError> {
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty()
            || line.contains(" libs found in cache ")
            || line.starts_with("Cache generated by:")
        {
            continue;
        }
        entries.push(
            parse_ldconfig_line(line).ok_or_else(|| FactsError::InvalidLine {
                line: index + 1,
                text: line.to_string(),
            })?,
        );
    }
    Ok(entries)
}

/// Reads `\tSONAME (FLAGS) => PATH`, the shape of every cache line.
fn parse_ldconfig_line(line: &str) -> Option<LdconfigEntry> {
    if !line.starts_with(char::is_whitespace) {
        return None;
    }
    let (left, path) = line.trim().split_once(" => ")?;
    let (soname, flags) = left.split_once(" (")?;
    let flags = flags.strip_suffix(')')?;
    if soname.is_empty() || path.trim().is_empty() {
        return None;
    }
    Some(LdconfigEntry {
        soname: soname.to_string(),
        flags: flags
            .split(',')
            .map(|flag| flag.trim().to_string())
            .collect(),
        path: PathBuf::from(path.trim()),
    })
}

/// Parses `PATH\tREAL_PATH` lines (section `library-files`).
pub fn parse_library_files(text: &str) -> Result<Vec<LibraryFile>, FactsError> {
    let mut files = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let (path, real_path) = line
            .split_once('\t')
            .ok_or_else(|| FactsError::InvalidLine {
                line: index + 1,
                text: line.to_string(),
            })?;
        files.push(LibraryFile {
            path: PathBuf::from(path),
            real_path: PathBuf::from(if real_path.is_empty() {
                path
            } else {
                real_path
            }),
        });
    }
    Ok(files)
}

/// Parses section `ld-so-conf`: each file opens with `==> PATH <==` (as `head` prints).
pub fn parse_ld_so_conf(text: &str) -> Result<Vec<LdSoConfFile>, FactsError> {
    let mut files: Vec<LdSoConfFile> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if let Some(path) = line
            .strip_prefix("==> ")
            .and_then(|rest| rest.strip_suffix(" <=="))
        {
            files.push(LdSoConfFile {
                path: PathBuf::from(path),
                lines: Vec::new(),
            });
            continue;
        }
        match files.last_mut() {
            Some(file) => file.lines.push(line.to_string()),
            None if line.trim().is_empty() => {}
            None => {
                return Err(FactsError::InvalidLine {
                    line: index + 1,
                    text: line.to_string(),
                });
            }
        }
    }
    for file in &mut files {
        while file.lines.last().is_some_and(|line| line.trim().is_empty()) {
            file.lines.pop();
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::{capture, capture_part};

    #[test]
    fn h200_ldconfig_resolves_libnvrtc_13_into_the_toolkit() {
        let entries = parse_ldconfig(&capture("ldconfig-p.txt")).unwrap();
        assert_eq!(entries.len(), 520);
        let facts = LdconfigFacts {
            entries,
            ..LdconfigFacts::default()
        };
        assert_eq!(
            facts.resolve("libnvrtc.so.13"),
            Some(Path::new(
                "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13"
            ))
        );
        assert_eq!(
            facts.resolve("libcudnn.so.9"),
            Some(Path::new("/lib/x86_64-linux-gnu/libcudnn.so.9"))
        );
        assert_eq!(
            facts.resolve("libcuda.so.1"),
            Some(Path::new("/usr/local/nvidia/lib64/libcuda.so.1"))
        );
        assert_eq!(facts.resolve("libnvrtc.so.12"), None);
        let nvrtc = facts
            .entries
            .iter()
            .find(|entry| entry.soname == "libnvrtc.so.13")
            .unwrap();
        assert_eq!(nvrtc.flags, vec!["libc6", "x86-64"]);
    }

    #[test]
    fn h200_system_txt_ldconfig_lines_parse() {
        let lines = capture_part("system.txt", "## ldconfig", "## ld.so.conf.d");
        let entries = parse_ldconfig(&lines).unwrap();
        assert_eq!(entries.len(), 40);
    }

    /// See: issue 8 ("Real nodes, first time"), item 3: on the H200 the loader finds
    /// `libnvrtc.so.13` through `/usr/local/cuda/…` (a link to `cuda-13.0`, listed first by
    /// NVIDIA's `000_cuda.conf`); that is the manifest's directory, by real path.
    #[test]
    fn expected_libraries_are_judged_by_real_paths() {
        let real = "/usr/local/cuda-13.0/targets/x86_64-linux/lib";
        let linked = "/usr/local/cuda/targets/x86_64-linux/lib";
        let facts = LdconfigFacts {
            entries: parse_ldconfig(&format!(
                "\tlibnvrtc.so.13 (libc6,x86-64) => {linked}/libnvrtc.so.13\n\
                 \tlibnvrtc.so.13 (libc6,x86-64) => {real}/libnvrtc.so.13\n"
            ))
            .unwrap(),
            files: parse_library_files(&format!(
                "{linked}/libnvrtc.so.13\t{real}/libnvrtc.so.13.0.88\n\
                 {real}/libnvrtc.so.13\t{real}/libnvrtc.so.13.0.88\n"
            ))
            .unwrap(),
            conf_files: Vec::new(),
            directories: parse_library_files(&format!("{real}\t{real}\n{linked}\t{real}\n"))
                .unwrap(),
        };
        let expected = vec!["libnvrtc.so.13".to_string(), "libcudart.so.13".to_string()];
        for directory in [real, linked] {
            assert_eq!(
                facts.unresolved(&expected, &[PathBuf::from(directory)]),
                vec!["libcudart.so.13"],
                "{directory}"
            );
        }
        assert_eq!(
            facts.unresolved(
                &expected[..1],
                &[PathBuf::from("/usr/lib/x86_64-linux-gnu")]
            ),
            vec!["libnvrtc.so.13"]
        );
    }

    #[test]
    fn cudnn_versions_come_from_real_file_names() {
        let facts = LdconfigFacts {
            entries: parse_ldconfig(
                "\tlibcudnn.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so.9\n\
                 \tlibcudnn.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so\n",
            )
            .unwrap(),
            files: parse_library_files(
                "/lib/x86_64-linux-gnu/libcudnn.so.9\t/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0\n\
                 /lib/x86_64-linux-gnu/libcudnn.so\t/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0\n",
            )
            .unwrap(),
            conf_files: Vec::new(),
            directories: Vec::new(),
        };
        let libraries = facts.cudnn_libraries();
        assert_eq!(libraries.len(), 1);
        assert_eq!(libraries[0].version.to_string(), "9.14.0");
        assert_eq!(
            libraries[0].directory,
            Path::new("/usr/lib/x86_64-linux-gnu")
        );
    }

    #[test]
    fn ld_so_conf_files_keep_their_lines() {
        let files = parse_ld_so_conf(
            "==> /etc/ld.so.conf.d/000_cuda.conf <==\n/usr/local/cuda/targets/x86_64-linux/lib\n\
             ==> /etc/ld.so.conf.d/libc.conf <==\n# libc default configuration\n/usr/local/lib\n\n",
        )
        .unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].path, Path::new("/etc/ld.so.conf.d/000_cuda.conf"));
        assert_eq!(
            files[1].lines,
            vec!["# libc default configuration", "/usr/local/lib"]
        );
        assert!(parse_ld_so_conf("stray\n").is_err());
    }

    #[test]
    fn ldconfig_lines_with_abi_and_hwcap_flags_parse() {
        let entries = parse_ldconfig(
            "\tlibfoo.so.1 (libc6,x86-64, OS ABI: Linux 3.2.0) => /usr/lib/libfoo.so.1\n\
             \tlibbar.so.2 (libc6,x86-64, hwcap: 0x0000000000000004) => /usr/lib/x86_64/libbar.so.2\n",
        )
        .unwrap();
        assert_eq!(
            entries[0].flags,
            vec!["libc6", "x86-64", "OS ABI: Linux 3.2.0"]
        );
        assert_eq!(
            entries[1].path,
            PathBuf::from("/usr/lib/x86_64/libbar.so.2")
        );
    }

    #[test]
    fn malformed_ldconfig_line_is_an_error() {
        assert!(matches!(
            parse_ldconfig("\tlibx.so => \n"),
            Err(FactsError::InvalidLine { line: 1, .. })
        ));
    }
}
