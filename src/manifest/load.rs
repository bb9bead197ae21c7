//! Loading a manifest: YAML tree → typed [`Manifest`], with every problem located.
//!
//! The walk never stops at the first problem: each section is checked on its own, and
//! references between sections (an index a package names) are checked at the end, so
//! one run of `upgrade validate` lists everything that is wrong with a file.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use pep440_rs::VersionSpecifiers;
use pep508_rs::PackageName;

use super::error::{Diagnostic, ManifestError};
use super::model::*;
use super::redact::{has_credentials, redact_text, redact_url};
use super::yaml::{self, Key, Node, NodeKind, Span};
use crate::cuda::{CudaVersion, CudaWheelPolicy, DriverVersion, GpuArch};
use crate::shell;

/// Where a manifest comes from: a file, or a file at a git revision (`REV:PATH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestSource {
    /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    Path(PathBuf),
    /// e.g. `origin/main:manifests/sglang-0.5.9-cu130.yaml`.
    GitRevision {
        /// e.g. `origin/main`.
        rev: String,
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        path: String,
    },
}

impl ManifestSource {
    /// Read an argument: an existing path wins; else `REV:PATH` when it has a colon.
    pub fn parse(argument: &str) -> Self {
        let path = PathBuf::from(argument);
        if path.exists() {
            return Self::Path(path);
        }
        match argument.split_once(':') {
            Some((rev, path)) if !rev.is_empty() && !path.is_empty() => Self::GitRevision {
                rev: rev.to_string(),
                path: path.to_string(),
            },
            _ => Self::Path(path),
        }
    }
}

/// Load a manifest from a path or a git revision.
pub fn load(source: &ManifestSource) -> Result<Manifest, ManifestError> {
    match source {
        ManifestSource::Path(path) => load_file(path),
        ManifestSource::GitRevision { rev, path } => {
            if rev.starts_with('-') {
                return Err(ManifestError::GitShow {
                    rev: rev.clone(),
                    path: path.clone(),
                    message: "a revision does not start with `-`".to_string(),
                });
            }
            // `--end-of-options`: whatever the argument says, git reads it as a revision.
            let output = Command::new("git")
                .arg("show")
                .arg("--end-of-options")
                .arg(format!("{rev}:{path}"))
                .output()
                .map_err(|error| ManifestError::GitShow {
                    rev: rev.clone(),
                    path: path.clone(),
                    message: error.to_string(),
                })?;
            if !output.status.success() {
                return Err(ManifestError::GitShow {
                    rev: rev.clone(),
                    path: path.clone(),
                    message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
                });
            }
            let file = format!("{rev}:{path}");
            if output.stdout.len() > MAX_MANIFEST_BYTES {
                return Err(ManifestError::TooLarge {
                    file,
                    size: output.stdout.len() as u64,
                });
            }
            let text = decode(output.stdout, &file)?;
            // Patches are looked up at that revision's tree, which is not on disk.
            load_str(&text, &file, None)
        }
    }
}

/// The largest manifest read, 16 MiB: the shipped ones are a few kilobytes, and the
/// bound keeps loading a hostile file within a small multiple of this in memory.
pub const MAX_MANIFEST_BYTES: usize = 16 * 1024 * 1024;

/// Read a manifest file as text: at most [`MAX_MANIFEST_BYTES`], and UTF-8 (a file that
/// is not gets the line and column of its first bad byte).
pub fn read_text(path: &Path) -> Result<String, ManifestError> {
    let read_error = |source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = fs_err::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() > MAX_MANIFEST_BYTES {
        let size = fs_err::metadata(path).map_or(bytes.len() as u64, |meta| meta.len());
        return Err(ManifestError::TooLarge {
            file: path.display().to_string(),
            size,
        });
    }
    decode(bytes, &path.display().to_string())
}

/// UTF-8 text, or a located diagnostic at the first byte that is not UTF-8.
fn decode(bytes: Vec<u8>, file: &str) -> Result<String, ManifestError> {
    String::from_utf8(bytes).map_err(|error| {
        let bytes = error.as_bytes();
        let valid = error.utf8_error().valid_up_to();
        let before = &bytes[..valid];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |newline| newline + 1);
        // Every byte before `valid` is UTF-8, so the column counts characters.
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        let byte = bytes.get(valid).copied().unwrap_or_default();
        ManifestError::Invalid {
            file: file.to_string(),
            diagnostics: vec![Diagnostic {
                file: file.to_string(),
                span: Span { line, column },
                message: format!("invalid UTF-8: byte `0x{byte:02x}` is not UTF-8 text"),
                hint: Some("a manifest is UTF-8 text; re-encode the file".to_string()),
            }],
        }
    })
}

/// The directory a manifest's relative paths (patches) are read from: the file's parent,
/// or `.` for a bare file name (`overlay.yaml` has the parent `` (empty), which names no
/// directory).
pub fn base_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Load a manifest file; patch files are checked relative to its directory.
pub fn load_file(path: &Path) -> Result<Manifest, ManifestError> {
    let text = read_text(path)?;
    load_str(&text, &path.display().to_string(), Some(&base_dir(path)))
}

/// Load a manifest from text. `file` names it in diagnostics; `base_dir`, when given,
/// is where relative patch paths must exist.
pub fn load_str(
    text: &str,
    file: &str,
    base_dir: Option<&Path>,
) -> Result<Manifest, ManifestError> {
    let mut checker = Checker {
        file: file.to_string(),
        base_dir: base_dir.map(Path::to_path_buf),
        diagnostics: Vec::new(),
    };
    let (root, problems) = yaml::parse(text);
    for problem in problems {
        checker.error(problem.span, problem.message);
    }
    let manifest = match root {
        Some(root) => checker.manifest(&root),
        None => {
            if checker.diagnostics.is_empty() {
                checker.error(
                    Span { line: 1, column: 1 },
                    "expected a manifest mapping, found an empty file",
                );
            }
            None
        }
    };
    match manifest {
        Some(manifest) if checker.diagnostics.is_empty() => Ok(manifest),
        _ => {
            let mut diagnostics = checker.diagnostics;
            diagnostics.sort_by_key(|diagnostic| diagnostic.span);
            Err(ManifestError::Invalid {
                file: file.to_string(),
                diagnostics,
            })
        }
    }
}

/// The top-level keys of schema 1, in documentation order.
const TOP_KEYS: &[&str] = &[
    "schema",
    "name",
    "description",
    "upgrade",
    "target",
    "toolkit",
    "indexes",
    "packages",
    "overrides",
    "constraints",
    "ldconfig",
    "env",
    "verify",
];

struct Checker {
    file: String,
    base_dir: Option<PathBuf>,
    diagnostics: Vec<Diagnostic>,
}

/// The entries of one mapping, consumed key by key; what is left is unknown.
struct Fields<'a> {
    context: String,
    span: Span,
    entries: Vec<(&'a Key, &'a Node)>,
    allowed: &'static [&'static str],
}

impl<'a> Fields<'a> {
    fn take(&mut self, key: &str) -> Option<&'a Node> {
        let position = self.entries.iter().position(|(k, _)| k.text == key)?;
        // Duplicates were reported by the parser; the first one counts.
        let (_, node) = self.entries.remove(position);
        self.entries.retain(|(k, _)| k.text != key);
        Some(node)
    }
}

impl Checker {
    /// Record a problem. Every message passes [`redact_text`], so a URL quoted in it
    /// never shows its credentials.
    fn error(&mut self, span: Span, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.clone(),
            span,
            message: redact_text(&message.into()),
            hint: None,
        });
    }

    fn error_with_hint(&mut self, span: Span, message: impl Into<String>, hint: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.clone(),
            span,
            message: redact_text(&message.into()),
            hint: Some(hint.into()),
        });
    }

    /// Open a mapping node; reports a wrong type.
    fn fields<'a>(
        &mut self,
        node: &'a Node,
        context: &str,
        allowed: &'static [&'static str],
    ) -> Option<Fields<'a>> {
        match &node.kind {
            NodeKind::Mapping(entries) => Some(Fields {
                context: context.to_string(),
                span: node.span,
                entries: entries.iter().map(|(k, v)| (k, v)).collect(),
                allowed,
            }),
            _ => {
                self.error(
                    node.span,
                    format!(
                        "expected `{context}` to be a mapping, found {}",
                        node.type_name()
                    ),
                );
                None
            }
        }
    }

    /// Report what was not consumed as unknown keys.
    fn finish(&mut self, fields: Fields<'_>) {
        for (key, _) in fields.entries {
            let message = format!(
                "unknown key `{}` in `{}` (expected one of: {})",
                key.text,
                fields.context,
                fields.allowed.join(", ")
            );
            match closest(&key.text, fields.allowed) {
                Some(near) => {
                    self.error_with_hint(key.span, message, format!("did you mean `{near}`?"))
                }
                None => self.error(key.span, message),
            }
        }
    }

    fn require<'a>(&mut self, fields: &mut Fields<'a>, key: &str) -> Option<&'a Node> {
        let node = fields.take(key);
        if node.is_none() {
            let span = fields.span;
            let context = fields.context.clone();
            self.error(span, format!("missing required key `{key}` in `{context}`"));
        }
        node
    }

    /// Refuse characters that cannot mean anything in a value and can hide or forge
    /// text: C0 and C1 controls (NUL, escape…) other than tab and line feed where
    /// `multi_line`, and the bidirectional controls (e.g. U+202E) everywhere.
    fn check_characters(&mut self, span: Span, what: &str, text: &str, multi_line: bool) -> bool {
        let bad = text.chars().enumerate().find(|(_, c)| {
            let allowed = multi_line && matches!(c, '\t' | '\n');
            (c.is_control() && !allowed) || is_bidi_control(*c)
        });
        match bad {
            None => true,
            Some((position, c)) => {
                let kind = if is_bidi_control(c) {
                    "bidirectional control character"
                } else {
                    "control character"
                };
                self.error(
                    span,
                    format!(
                        "invalid `{what}`: {kind} U+{:04X} at character {}; it cannot mean anything here",
                        u32::from(c),
                        position + 1
                    ),
                );
                false
            }
        }
    }

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.kind {
            NodeKind::Scalar(scalar) if !node.is_null() => self
                .check_characters(node.span, what, &scalar.text, true)
                .then(|| scalar.text.clone()),
            _ => {
                self.error(
                    node.span,
                    format!(
                        "expected `{what}` to be a string, found {}",
                        node.type_name()
                    ),
                );
                None
            }
        }
    }

    fn non_empty_string(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.string(node, what)?;
        if text.trim().is_empty() {
            self.error(
                node.span,
                format!("expected `{what}` to be a non-empty string"),
            );
            return None;
        }
        Some(text)
    }

    /// A non-empty value on one line: no control characters at all.
    fn line(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.non_empty_string(node, what)?;
        self.check_characters(node.span, what, &text, false)
            .then_some(text)
    }

    /// A name handed to a program as an argument (a package, a revision): one line,
    /// no whitespace, and never starting with `-`, which a program would read as an option.
    fn argument(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.line(node, what)?;
        if text.starts_with('-') {
            self.error_with_hint(
                node.span,
                format!("invalid `{what}` `{text}`: a value starting with `-` would be read as an option"),
                "name it without the leading `-`",
            );
            return None;
        }
        if text.chars().any(char::is_whitespace) {
            self.error(
                node.span,
                format!("invalid `{what}` `{text}`: expected one word, without spaces"),
            );
            return None;
        }
        Some(text)
    }

    fn boolean(&mut self, node: &Node, what: &str) -> Option<bool> {
        match &node.kind {
            NodeKind::Scalar(scalar) if !scalar.quoted => match scalar.text.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                other => {
                    self.error(
                        node.span,
                        format!("expected `{what}` to be `true` or `false`, found `{other}`"),
                    );
                    None
                }
            },
            _ => {
                self.error(
                    node.span,
                    format!(
                        "expected `{what}` to be `true` or `false`, found {}",
                        node.type_name()
                    ),
                );
                None
            }
        }
    }

    fn absolute_path(&mut self, node: &Node, what: &str) -> Option<PathBuf> {
        let text = self.line(node, what)?;
        self.absolute_path_text(node.span, what, &text)
    }

    /// An absolute path without `..` (a path that climbs out of where it seems to be).
    fn absolute_path_text(&mut self, span: Span, what: &str, text: &str) -> Option<PathBuf> {
        let path = PathBuf::from(text);
        if !path.is_absolute() {
            self.error_with_hint(
                span,
                format!("expected `{what}` to be an absolute path, found `{text}`"),
                "paths on a node are absolute: the tool does not guess a working directory",
            );
            return None;
        }
        if path.components().any(|c| matches!(c, Component::ParentDir)) {
            self.error_with_hint(
                span,
                format!("invalid `{what}` `{text}`: `..` is not allowed in a path"),
                "write the path it means, without `..`",
            );
            return None;
        }
        Some(path)
    }

    /// An absolute path that names a file, not the root or a directory, e.g. an
    /// interpreter `/opt/ml-env/bin/python3`.
    fn file_path(&mut self, node: &Node, what: &str) -> Option<PathBuf> {
        let path = self.absolute_path(node, what)?;
        let text = path.display().to_string();
        if path.file_name().is_none() || text.ends_with('/') {
            self.error(
                node.span,
                format!("invalid `{what}` `{text}`: expected the path of a file, not a directory"),
            );
            return None;
        }
        Some(path)
    }

    fn sequence<'a>(&mut self, node: &'a Node, what: &str) -> Option<&'a [Node]> {
        match &node.kind {
            NodeKind::Sequence(items) => Some(items),
            _ => {
                self.error(
                    node.span,
                    format!(
                        "expected `{what}` to be a sequence, found {}",
                        node.type_name()
                    ),
                );
                None
            }
        }
    }

    fn strings(&mut self, node: &Node, what: &str) -> Vec<(String, Span)> {
        let Some(items) = self.sequence(node, what) else {
            return Vec::new();
        };
        let item_what = format!("{what}[]");
        items
            .iter()
            .filter_map(|item| Some((self.line(item, &item_what)?, item.span)))
            .collect()
    }

    fn parsed<T: FromStr>(&mut self, node: &Node, what: &str) -> Option<T>
    where
        T::Err: std::fmt::Display,
    {
        let text = self.non_empty_string(node, what)?;
        match text.parse::<T>() {
            Ok(value) => Some(value),
            Err(error) => {
                self.error(node.span, format!("invalid `{what}`: {error}"));
                None
            }
        }
    }

    fn manifest(&mut self, root: &Node) -> Option<Manifest> {
        let mut fields = self.fields(root, "manifest", TOP_KEYS)?;
        let schema = self.require(&mut fields, "schema").and_then(|node| {
            let text = self.string(node, "schema")?;
            match text.parse::<u32>() {
                Ok(SCHEMA_VERSION) => Some(SCHEMA_VERSION),
                _ => {
                    self.error(node.span, format!("unsupported `schema` `{text}`: this build reads schema {SCHEMA_VERSION}"));
                    None
                }
            }
        });
        let name = self
            .require(&mut fields, "name")
            .and_then(|node| self.line(node, "name"));
        let description = fields
            .take("description")
            .and_then(|node| self.string(node, "description"));
        let upgrade = fields
            .take("upgrade")
            .and_then(|node| self.tool_requirement(node));
        let target = self
            .require(&mut fields, "target")
            .and_then(|node| self.target(node));
        let toolkit = fields.take("toolkit").and_then(|node| self.toolkit(node));
        let indexes = fields
            .take("indexes")
            .map(|node| self.indexes(node))
            .unwrap_or_default();
        let packages = fields
            .take("packages")
            .map(|node| self.packages(node))
            .unwrap_or_default();
        let overrides = fields
            .take("overrides")
            .map(|node| self.pins(node, "overrides"))
            .unwrap_or_default();
        let constraints = fields
            .take("constraints")
            .map(|node| self.pins(node, "constraints"))
            .unwrap_or_default();
        let ldconfig = fields.take("ldconfig").and_then(|node| self.ldconfig(node));
        let env = fields
            .take("env")
            .map(|node| self.env(node))
            .unwrap_or_default();
        let verify = fields.take("verify").and_then(|node| self.verify(node));
        self.finish(fields);

        self.check_references(&indexes, &packages);
        schema?;
        Some(Manifest {
            name: name?,
            description,
            upgrade,
            target: target?,
            toolkit,
            indexes,
            packages,
            overrides,
            constraints,
            ldconfig,
            env,
            verify,
        })
    }

    fn tool_requirement(&mut self, node: &Node) -> Option<semver::VersionReq> {
        let requirement: semver::VersionReq = self.parsed(node, "upgrade")?;
        let running = semver::Version::parse(env!("CARGO_PKG_VERSION")).ok()?;
        if !requirement.matches(&running) {
            self.error_with_hint(
                node.span,
                format!(
                    "this manifest needs `upgrade` `{requirement}`, but this is `upgrade` {running}"
                ),
                "install a matching release of the tool",
            );
        }
        Some(requirement)
    }

    fn target(&mut self, node: &Node) -> Option<Target> {
        const KEYS: &[&str] = &[
            "python",
            "base_python",
            "python_version",
            "glibc",
            "driver",
            "gpu_arch",
            "cuda_wheels",
        ];
        let mut fields = self.fields(node, "target", KEYS)?;
        let python = self
            .require(&mut fields, "python")
            .and_then(|n| self.file_path(n, "target.python"));
        let base_python = fields
            .take("base_python")
            .and_then(|n| self.file_path(n, "target.base_python"));
        let python_version = fields.take("python_version").and_then(|n| {
            let text = self.non_empty_string(n, "target.python_version")?;
            let valid = text.split('.').count() >= 2
                && text.split('.').count() <= 3
                && text.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
            if !valid {
                self.error(n.span, format!("invalid `target.python_version` `{text}`: expected `MAJOR.MINOR[.PATCH]`, e.g. `3.12`"));
                return None;
            }
            Some(text)
        });
        let glibc = fields.take("glibc").and_then(|n| {
            let text = self.non_empty_string(n, "target.glibc")?;
            let valid = text.split('.').count() == 2
                && text
                    .split('.')
                    .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
            if !valid {
                self.error(
                    n.span,
                    format!("invalid `target.glibc` `{text}`: expected `MAJOR.MINOR`, e.g. `2.35`"),
                );
                return None;
            }
            Some(text)
        });
        let driver = fields
            .take("driver")
            .and_then(|n| self.parsed::<DriverVersion>(n, "target.driver"));
        let gpu_arch = fields
            .take("gpu_arch")
            .map(|n| {
                self.strings(n, "target.gpu_arch")
                    .into_iter()
                    .filter_map(|(text, span)| match text.parse::<GpuArch>() {
                        Ok(arch) => Some(arch),
                        Err(error) => {
                            self.error(span, format!("invalid `target.gpu_arch` entry: {error}"));
                            None
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let cuda_wheels = fields
            .take("cuda_wheels")
            .and_then(|n| self.parsed::<CudaWheelPolicy>(n, "target.cuda_wheels"));
        self.finish(fields);
        Some(Target {
            python: python?,
            base_python,
            python_version,
            glibc,
            driver,
            gpu_arch,
            cuda_wheels,
        })
    }

    fn toolkit(&mut self, node: &Node) -> Option<Toolkit> {
        const KEYS: &[&str] = &[
            "version",
            "prefix",
            "installer",
            "source",
            "package",
            "keep_existing",
            "provenance",
        ];
        let mut fields = self.fields(node, "toolkit", KEYS)?;
        let version = self
            .require(&mut fields, "version")
            .and_then(|n| self.parsed::<CudaVersion>(n, "toolkit.version"));
        let prefix = self
            .require(&mut fields, "prefix")
            .and_then(|n| self.toolkit_prefix(n));
        let installer_node = self.require(&mut fields, "installer");
        let installer = installer_node.and_then(|n| {
            let text = self.string(n, "toolkit.installer")?;
            match text.as_str() {
                "runfile" => Some(InstallerKind::Runfile),
                "apt" => Some(InstallerKind::Apt),
                other => {
                    self.error(
                        n.span,
                        format!(
                            "invalid `toolkit.installer` `{other}`: expected `runfile` or `apt`"
                        ),
                    );
                    None
                }
            }
        });
        let source_node = fields.take("source");
        let source = source_node.and_then(|n| self.source(n));
        let package_node = fields.take("package");
        let package = package_node.and_then(|n| self.apt_package(n));
        let keep_existing = fields
            .take("keep_existing")
            .and_then(|n| self.boolean(n, "toolkit.keep_existing"))
            .unwrap_or(true);
        let provenance = fields
            .take("provenance")
            .and_then(|n| self.non_empty_string(n, "toolkit.provenance"));
        let span = fields.span;
        self.finish(fields);
        match installer {
            Some(InstallerKind::Runfile) if source_node.is_none() => {
                self.error(span, "missing required key `source` in `toolkit`: a runfile installer needs `source.url` and `source.sha256`");
            }
            Some(InstallerKind::Apt) if package_node.is_none() => {
                self.error(span, "missing required key `package` in `toolkit`: an apt installer needs the package name, e.g. `cuda-toolkit-13-0`");
            }
            _ => {}
        }
        Some(Toolkit {
            version: version?,
            prefix: prefix?,
            installer: installer?,
            source,
            package,
            keep_existing,
            provenance,
        })
    }

    /// The toolkit's own directory: never `/` or a system directory it would share.
    fn toolkit_prefix(&mut self, node: &Node) -> Option<PathBuf> {
        let path = self.absolute_path(node, "toolkit.prefix")?;
        let normalized: PathBuf = path.components().collect();
        if SYSTEM_DIRECTORIES
            .iter()
            .any(|dir| normalized == Path::new(dir))
        {
            self.error_with_hint(
                node.span,
                format!(
                    "invalid `toolkit.prefix` `{}`: a toolkit gets its own directory, not `{}`",
                    path.display(),
                    normalized.display()
                ),
                "e.g. `/usr/local/cuda-13.0`",
            );
            return None;
        }
        Some(path)
    }

    /// A Debian package name, e.g. `cuda-toolkit-13-0`: lower-case letters, digits and
    /// `+ - .`, starting with a letter or digit (Debian Policy 5.6.1).
    fn apt_package(&mut self, node: &Node) -> Option<String> {
        let text = self.argument(node, "toolkit.package")?;
        let valid = text.len() >= 2
            && text
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b));
        if !valid {
            self.error(
                node.span,
                format!("invalid `toolkit.package` `{text}`: expected a Debian package name (lower-case letters, digits, `+`, `-`, `.`), e.g. `cuda-toolkit-13-0`"),
            );
            return None;
        }
        Some(text)
    }

    fn source(&mut self, node: &Node) -> Option<Source> {
        const KEYS: &[&str] = &["url", "sha256"];
        let mut fields = self.fields(node, "toolkit.source", KEYS)?;
        let url = self
            .require(&mut fields, "url")
            .and_then(|n| self.runfile_url(n));
        let sha256 = self
            .require(&mut fields, "sha256")
            .and_then(|n| self.parsed::<Sha256>(n, "toolkit.source.sha256"));
        self.finish(fields);
        Some(Source {
            url: url?,
            sha256: sha256?,
        })
    }

    /// A URL with one of `schemes`. Credentials (`user:token@`, `?token=`) are refused
    /// unless `credentials` says the field can keep them off a node's command lines.
    /// Messages show the URL with its credentials masked.
    fn url(
        &mut self,
        node: &Node,
        what: &str,
        schemes: &[&str],
        credentials: Credentials,
    ) -> Option<String> {
        let text = self.line(node, what)?;
        let shown = redact_url(&text);
        let quoted: Vec<String> = schemes.iter().map(|scheme| format!("`{scheme}`")).collect();
        let expected = match quoted.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => quoted.concat(),
        };
        match url::Url::parse(&text) {
            Ok(parsed) if schemes.contains(&parsed.scheme()) => {
                if parsed.host_str().is_some_and(|host| host.starts_with('-')) {
                    self.error(
                        node.span,
                        format!("invalid `{what}` `{shown}`: a host does not start with `-`"),
                    );
                    return None;
                }
                if credentials == Credentials::Refused && has_credentials(&text) {
                    self.error_with_hint(
                        node.span,
                        format!("invalid `{what}` `{shown}`: credentials in this URL would be visible on the node"),
                        "serve it without credentials (e.g. from a host only the nodes reach); only `indexes[].url` and `packages.*.git` may carry credentials",
                    );
                    return None;
                }
                Some(text)
            }
            Ok(parsed) => {
                self.error(
                    node.span,
                    format!(
                        "invalid `{what}` `{shown}`: expected an {expected} URL, found scheme `{}`",
                        parsed.scheme()
                    ),
                );
                None
            }
            Err(error) => {
                self.error(node.span, format!("invalid `{what}` `{shown}`: {error}"));
                None
            }
        }
    }

    /// The runfile's URL: http(s) or file, naming a file (not ending in `/`, no `.` or
    /// `..` segment, which a server or the file system would resolve elsewhere).
    fn runfile_url(&mut self, node: &Node) -> Option<String> {
        const WHAT: &str = "toolkit.source.url";
        let text = self.url(node, WHAT, &["http", "https", "file"], Credentials::Refused)?;
        let path = url_path(&text);
        let dot_segment = path.split('/').any(|segment| {
            let segment = segment.to_ascii_lowercase().replace("%2e", ".");
            segment == "." || segment == ".."
        });
        if path.ends_with('/') || path.is_empty() || dot_segment {
            self.error(
                node.span,
                format!("invalid `{WHAT}` `{text}`: expected the URL of a file, without `.` or `..` segments and not ending in `/`"),
            );
            return None;
        }
        Some(text)
    }

    fn indexes(&mut self, node: &Node) -> Vec<Index> {
        const KEYS: &[&str] = &["name", "url", "explicit", "provenance"];
        let Some(items) = self.sequence(node, "indexes") else {
            return Vec::new();
        };
        let mut indexes: Vec<Index> = Vec::new();
        let mut first_by_name: HashMap<String, Span> = HashMap::new();
        let mut default_index: Option<(String, Span)> = None;
        for item in items {
            let Some(mut fields) = self.fields(item, "indexes[]", KEYS) else {
                continue;
            };
            let name_node = self.require(&mut fields, "name");
            let name = name_node.and_then(|n| self.index_name(n));
            let url = fields.take("url").and_then(|n| {
                self.url(
                    n,
                    "indexes[].url",
                    &["http", "https", "file"],
                    Credentials::Allowed,
                )
            });
            let explicit = fields
                .take("explicit")
                .and_then(|n| self.boolean(n, "indexes[].explicit"))
                .unwrap_or(false);
            let provenance = fields
                .take("provenance")
                .and_then(|n| self.non_empty_string(n, "indexes[].provenance"));
            self.finish(fields);
            let (Some(name), Some(name_node)) = (name, name_node) else {
                continue;
            };
            if let Some(first) = first_by_name.get(&name) {
                self.error(
                    name_node.span,
                    format!("duplicate index name `{name}` (first defined at {first})"),
                );
                continue;
            }
            if url.is_none() {
                if let Some((first_name, first)) = &default_index {
                    self.error(name_node.span, format!("index `{name}` has no `url`, and `{first_name}` already stands for pip's configured default index (at {first})"));
                    continue;
                }
                default_index = Some((name.clone(), item.span));
            }
            first_by_name.insert(name.clone(), item.span);
            indexes.push(Index {
                name,
                url,
                explicit,
                provenance,
                span: item.span,
            });
        }
        indexes
    }

    fn index_name(&mut self, node: &Node) -> Option<String> {
        let name = self.argument(node, "indexes[].name")?;
        let valid = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !valid {
            self.error(
                node.span,
                format!("invalid index name `{name}`: expected letters, digits, `-`, `_` and `.`"),
            );
            return None;
        }
        Some(name)
    }

    fn packages(&mut self, node: &Node) -> Vec<Package> {
        let NodeKind::Mapping(entries) = &node.kind else {
            self.error(node.span, format!("expected `packages` to be a mapping of package name to version or source, found {}", node.type_name()));
            return Vec::new();
        };
        let mut packages: Vec<Package> = Vec::new();
        let mut seen: HashMap<PackageName, &Key> = HashMap::new();
        for (key, value) in entries {
            let name = match PackageName::from_str(&key.text) {
                Ok(name) => name,
                Err(error) => {
                    self.error(
                        key.span,
                        format!("invalid package name `{}`: {error}", key.text),
                    );
                    continue;
                }
            };
            if let Some(first) = seen.get(&name) {
                // An identical key was already reported by the parser as a duplicate.
                if first.text != key.text {
                    let first = first.span;
                    self.error(key.span, format!("package `{name}` is listed twice (first at {first}; names compare after PEP 503 normalization)"));
                }
                continue;
            }
            seen.insert(name.clone(), key);
            if let Some(package) = self.package(name, key, value) {
                packages.push(package);
            }
        }
        packages
    }

    fn package(&mut self, name: PackageName, key: &Key, value: &Node) -> Option<Package> {
        const KEYS: &[&str] = &[
            "version",
            "index",
            "extras",
            "reason",
            "git",
            "rev",
            "subdirectory",
            "patches",
        ];
        let what = format!("packages.{}", key.text);
        if let NodeKind::Scalar(_) = value.kind {
            let specifiers = self.specifiers(value, &what)?;
            return Some(Package {
                name,
                origin: PackageOrigin::Index {
                    specifiers,
                    index: None,
                },
                extras: Vec::new(),
                reason: None,
                span: key.span,
            });
        }
        let mut fields = self.fields(value, &what, KEYS)?;
        let version = fields.take("version");
        let index = fields.take("index").and_then(|n| {
            self.line(n, &format!("{what}.index"))
                .map(|text| (text, n.span))
        });
        let extras = fields
            .take("extras")
            .map(|n| {
                self.strings(n, &format!("{what}.extras"))
                    .into_iter()
                    .filter_map(
                        |(extra, span)| match pep508_rs::ExtraName::from_str(&extra) {
                            Ok(parsed) => Some(parsed.to_string()),
                            Err(error) => {
                                self.error(span, format!("invalid extra `{extra}`: {error}"));
                                None
                            }
                        },
                    )
                    .collect()
            })
            .unwrap_or_default();
        let reason = fields
            .take("reason")
            .and_then(|n| self.non_empty_string(n, &format!("{what}.reason")));
        let git = fields.take("git");
        let rev = fields.take("rev");
        let subdirectory = fields.take("subdirectory");
        let patches = fields.take("patches");
        let span = fields.span;
        self.finish(fields);

        let origin = match git {
            Some(git) => {
                if let Some((_, index_span)) = &index {
                    self.error(*index_span, format!("`{what}` has both `git` and `index`: a git source does not come from an index"));
                }
                let url = self.git_url(git, &format!("{what}.git"));
                let rev = match rev {
                    Some(rev) => self.git_rev(rev, &format!("{what}.rev")),
                    None => {
                        self.error_with_hint(span, format!("missing required key `rev` in `{what}`"), "pin a tag or a commit, e.g. `rev: v0.5.9`; a branch name is not reproducible");
                        None
                    }
                };
                let subdirectory = subdirectory
                    .and_then(|n| self.relative_path(n, &format!("{what}.subdirectory")));
                let patches = patches
                    .map(|n| self.patches(n, &format!("{what}.patches")))
                    .unwrap_or_default();
                let version =
                    version.and_then(|n| self.exact_version(n, &format!("{what}.version")));
                PackageOrigin::Git(GitSource {
                    url: url?,
                    rev: rev?,
                    subdirectory,
                    patches,
                    version,
                })
            }
            None => {
                for (node, key) in [
                    (rev, "rev"),
                    (subdirectory, "subdirectory"),
                    (patches, "patches"),
                ] {
                    if let Some(node) = node {
                        self.error(
                            node.span,
                            format!("`{what}.{key}` needs `git`: only a git source has a {key}"),
                        );
                    }
                }
                let specifiers = match version {
                    Some(node) => self.specifiers(node, &format!("{what}.version"))?,
                    None => VersionSpecifiers::empty(),
                };
                PackageOrigin::Index {
                    specifiers,
                    index: index.map(|(text, _)| text),
                }
            }
        };
        Some(Package {
            name,
            origin,
            extras,
            reason,
            span: key.span,
        })
    }

    /// A git URL: `https`, `http`, `ssh`, `git` or `file`, or the scp-like
    /// `user@host:path`. Never a transport helper such as `ext::` or `fd::`, which
    /// run commands, and never an argument git could read as an option.
    fn git_url(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.line(node, what)?;
        if text.starts_with('-') || text.contains("::") {
            self.error_with_hint(
                node.span,
                format!("invalid `{what}` `{}`: expected a git URL (`https`, `http`, `ssh`, `git` or `file`) or `user@host:path`", redact_url(&text)),
                "git's `ext::` and `fd::` transports run commands and are refused",
            );
            return None;
        }
        // `git@host:org/repo` is git's scp-like syntax and is not a URL.
        if !text.contains("://") {
            if is_scp_like(&text) {
                return Some(text);
            }
            self.error_with_hint(
                node.span,
                format!("invalid `{what}` `{text}`: expected a git URL (`https`, `http`, `ssh`, `git` or `file`) or `user@host:path`"),
                "a repository on the node is `file:///path/to/repo`",
            );
            return None;
        }
        let text = self.url(
            node,
            what,
            &["https", "http", "ssh", "git", "file"],
            Credentials::Allowed,
        )?;
        if url::Url::parse(&text).is_ok_and(|parsed| parsed.username().starts_with('-')) {
            self.error(
                node.span,
                format!(
                    "invalid `{what}` `{}`: a user name does not start with `-`",
                    redact_url(&text)
                ),
            );
            return None;
        }
        Some(text)
    }

    /// A tag or commit for `git checkout`: one word, not an option, no range or
    /// reflog syntax.
    fn git_rev(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.argument(node, what)?;
        if text.contains("..") || text.contains("@{") || text.contains(':') {
            self.error_with_hint(
                node.span,
                format!("invalid `{what}` `{text}`: expected a tag or a commit"),
                "e.g. `v0.5.9` or a 40-digit commit",
            );
            return None;
        }
        Some(text)
    }

    fn relative_path(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.line(node, what)?;
        let path = Path::new(&text);
        if path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            self.error(node.span, format!("invalid `{what}` `{text}`: expected a path inside the repository (relative, without `..`)"));
            return None;
        }
        Some(text)
    }

    fn patches(&mut self, node: &Node, what: &str) -> Vec<PathBuf> {
        let mut patches = Vec::new();
        for (text, span) in self.strings(node, what) {
            let path = PathBuf::from(&text);
            if path.is_absolute() {
                self.error(span, format!("invalid `{what}` entry `{text}`: expected a path relative to the manifest's directory"));
                continue;
            }
            if path.components().any(|c| matches!(c, Component::ParentDir)) {
                self.error_with_hint(
                    span,
                    format!("invalid `{what}` entry `{text}`: `..` is not allowed: a patch lives in the manifest's directory or below"),
                    "patches are uploaded to the node; keep them beside the manifest",
                );
                continue;
            }
            if let Some(base) = &self.base_dir {
                let full = base.join(&path);
                if !full.is_file() {
                    self.error(
                        span,
                        format!(
                            "patch file `{text}` does not exist (looked for `{}`)",
                            full.display()
                        ),
                    );
                    continue;
                }
                // A symbolic link may still point out of the manifest's directory.
                let inside = match (base.canonicalize(), full.canonicalize()) {
                    (Ok(base), Ok(full)) => full.starts_with(base),
                    _ => false,
                };
                if !inside {
                    self.error(
                        span,
                        format!("invalid `{what}` entry `{text}`: it resolves outside the manifest's directory (through a symbolic link)"),
                    );
                    continue;
                }
            }
            patches.push(path);
        }
        patches
    }

    fn specifiers(&mut self, node: &Node, what: &str) -> Option<VersionSpecifiers> {
        let text = self.string(node, what)?;
        match VersionSpecifiers::from_str(&text) {
            Ok(specifiers) => Some(specifiers),
            Err(error) => {
                let hint = if text
                    .trim_start()
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
                {
                    Some(format!(
                        "a bare version is not a specifier: write `=={}`",
                        text.trim()
                    ))
                } else {
                    None
                };
                let message = format!(
                    "invalid PEP 440 specifier `{text}` for `{what}`: {}",
                    first_line(&error.to_string())
                );
                match hint {
                    Some(hint) => self.error_with_hint(node.span, message, hint),
                    None => self.error(node.span, message),
                }
                None
            }
        }
    }

    fn exact_version(&mut self, node: &Node, what: &str) -> Option<pep440_rs::Version> {
        let text = self.non_empty_string(node, what)?;
        match pep440_rs::Version::from_str(&text) {
            Ok(version) => Some(version),
            Err(error) => {
                self.error(
                    node.span,
                    format!(
                        "invalid PEP 440 version `{text}` for `{what}`: {}",
                        first_line(&error.to_string())
                    ),
                );
                None
            }
        }
    }

    fn pins(&mut self, node: &Node, section: &'static str) -> Vec<Pin> {
        const KEYS: &[&str] = &["requirement", "reason", "provenance"];
        let Some(items) = self.sequence(node, section) else {
            return Vec::new();
        };
        let mut pins = Vec::new();
        for item in items {
            let context = format!("{section}[]");
            let Some(mut fields) = self.fields(item, &context, KEYS) else {
                continue;
            };
            let requirement = self.require(&mut fields, "requirement").and_then(|n| {
                let text = self.line(n, &format!("{context}.requirement"))?;
                match crate::pep508::parse_requirement(&text) {
                    Ok(requirement) => Some(requirement),
                    Err(error) => {
                        self.error(
                            n.span,
                            format!(
                                "invalid PEP 508 requirement `{text}` in `{section}`: {}",
                                first_line(&error.to_string())
                            ),
                        );
                        None
                    }
                }
            });
            let reason = match fields.take("reason") {
                Some(n) => self.non_empty_string(n, &format!("{context}.reason")),
                None => {
                    self.error_with_hint(
                        fields.span,
                        format!("missing required key `reason` in `{context}`"),
                        format!("every entry of `{section}` says why it exists, for the reviewer and for whoever removes it later"),
                    );
                    None
                }
            };
            let provenance = fields
                .take("provenance")
                .and_then(|n| self.non_empty_string(n, &format!("{context}.provenance")));
            self.finish(fields);
            if let (Some(requirement), Some(reason)) = (requirement, reason) {
                pins.push(Pin {
                    requirement,
                    reason,
                    provenance,
                    span: item.span,
                });
            }
        }
        pins
    }

    fn ldconfig(&mut self, node: &Node) -> Option<Ldconfig> {
        const KEYS: &[&str] = &["file", "paths", "expect"];
        let mut fields = self.fields(node, "ldconfig", KEYS)?;
        let file_node = self.require(&mut fields, "file");
        let file = file_node.and_then(|n| self.absolute_path(n, "ldconfig.file"));
        let paths: Vec<PathBuf> = self
            .require(&mut fields, "paths")
            .map(|n| {
                self.strings(n, "ldconfig.paths")
                    .into_iter()
                    .filter_map(|(text, span)| {
                        self.absolute_path_text(span, "ldconfig.paths[]", &text)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let expect = fields
            .take("expect")
            .map(|n| {
                self.strings(n, "ldconfig.expect")
                    .into_iter()
                    .filter_map(|(text, span)| {
                        if text.starts_with("lib") && text.contains(".so") && !text.contains('/') {
                            Some(text)
                        } else {
                            self.error(span, format!("expected `ldconfig.expect` entries to be sonames like `libnvrtc.so.13`, found `{text}`"));
                            None
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.finish(fields);
        let file = file?;
        // Directly in the directory (no `..`, no subdirectory), a plain name.
        let plain_name = file
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| {
                name.len() > ".conf".len()
                    && !name.starts_with('.')
                    && !name.starts_with('-')
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
            });
        if file.parent() != Some(Path::new("/etc/ld.so.conf.d"))
            || !plain_name
            || file.extension().is_none_or(|ext| ext != "conf")
        {
            self.error_with_hint(
                file_node.map_or(node.span, |n| n.span),
                format!("expected `ldconfig.file` in `/etc/ld.so.conf.d/` ending in `.conf`, found `{}`", file.display()),
                "glibc's ld.so.conf includes only `/etc/ld.so.conf.d/*.conf`",
            );
        }
        Some(Ldconfig {
            file,
            paths,
            expect,
        })
    }

    fn env(&mut self, node: &Node) -> Vec<EnvVar> {
        const KEYS: &[&str] = &["value", "from_env", "secret"];
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
                    let span = fields.span;
                    self.finish(fields);
                    match (literal, from_env) {
                        (Some(literal), None) => Some(EnvVar {
                            name: name.clone(),
                            value: EnvValue::Literal(literal),
                            secret: secret.unwrap_or(false),
                        }),
                        // A value taken from the controller's environment is a secret unless said otherwise.
                        (None, Some(from)) => Some(EnvVar {
                            name: name.clone(),
                            value: EnvValue::FromEnv(from),
                            secret: secret.unwrap_or(true),
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

    fn verify(&mut self, node: &Node) -> Option<Verify> {
        const KEYS: &[&str] = &[
            "launch",
            "workdir",
            "log",
            "ready",
            "fail",
            "timeout",
            "require_idle_gpus",
            "health",
            "keep_running",
        ];
        let mut fields = self.fields(node, "verify", KEYS)?;
        let launch_node = self.require(&mut fields, "launch");
        let launch = launch_node.and_then(|n| match &n.kind {
            NodeKind::Sequence(_) => {
                let words: Vec<String> = self
                    .strings(n, "verify.launch")
                    .into_iter()
                    .map(|(word, _)| word)
                    .collect();
                if words.is_empty() {
                    self.error(n.span, "expected `verify.launch` to name a program");
                    return None;
                }
                Some(words)
            }
            _ => {
                let text = self.line(n, "verify.launch")?;
                match shell::split(&text) {
                    Ok(words) if !words.is_empty() => Some(words),
                    Ok(_) => {
                        self.error(n.span, "expected `verify.launch` to name a program");
                        None
                    }
                    Err(error) => {
                        self.error(n.span, format!("invalid `verify.launch`: {error}"));
                        None
                    }
                }
            }
        });
        let launch = launch.and_then(|words| {
            let program = words.first().map(String::as_str).unwrap_or_default();
            if program.starts_with('-') {
                if let Some(n) = launch_node {
                    self.error(
                        n.span,
                        format!("invalid `verify.launch`: the program `{program}` starts with `-`, which would be read as an option"),
                    );
                }
                return None;
            }
            Some(words)
        });
        let workdir = fields
            .take("workdir")
            .and_then(|n| self.absolute_path(n, "verify.workdir"));
        let log = self
            .require(&mut fields, "log")
            .and_then(|n| self.log_path(n));
        let ready = self
            .require(&mut fields, "ready")
            .and_then(|n| self.line(n, "verify.ready"));
        let fail = fields
            .take("fail")
            .map(|n| match &n.kind {
                NodeKind::Scalar(_) => self.line(n, "verify.fail").into_iter().collect(),
                _ => self
                    .strings(n, "verify.fail")
                    .into_iter()
                    .map(|(text, _)| text)
                    .collect(),
            })
            .unwrap_or_else(|| vec!["Traceback".to_string()]);
        let timeout = self.require(&mut fields, "timeout").and_then(|n| {
            let text = self.non_empty_string(n, "verify.timeout")?;
            match parse_duration(&text) {
                Ok(duration) => Some(duration),
                Err(hint) => {
                    self.error_with_hint(n.span, format!("invalid duration `{text}` for `verify.timeout`: expected e.g. `90s`, `10m` or `1h30m`"), hint);
                    None
                }
            }
        });
        let require_idle_gpus = fields
            .take("require_idle_gpus")
            .and_then(|n| self.boolean(n, "verify.require_idle_gpus"))
            .unwrap_or(true);
        let health = fields
            .take("health")
            .and_then(|n| self.url(n, "verify.health", &["http", "https"], Credentials::Refused));
        let keep_running = fields
            .take("keep_running")
            .and_then(|n| self.boolean(n, "verify.keep_running"))
            .unwrap_or(false);
        self.finish(fields);
        Some(Verify {
            launch: launch?,
            workdir,
            log: log?,
            ready: ready?,
            fail,
            timeout: timeout?,
            require_idle_gpus,
            health,
            keep_running,
        })
    }

    /// The verification log: an absolute file path outside the system's directories,
    /// since the launch replaces the file.
    fn log_path(&mut self, node: &Node) -> Option<PathBuf> {
        let path = self.file_path(node, "verify.log")?;
        let normalized: PathBuf = path.components().collect();
        let system = SYSTEM_TREES
            .iter()
            .find(|tree| normalized.starts_with(tree) || is_lib_tree(&normalized));
        if let Some(tree) = system {
            let tree = if is_lib_tree(&normalized) {
                "/lib*"
            } else {
                tree
            };
            self.error_with_hint(
                node.span,
                format!("invalid `verify.log` `{}`: the launch writes the log, and `{tree}` belongs to the system", path.display()),
                "write it under `/var/log`, `/var/tmp` or the workdir, e.g. `/var/log/sglang-verify.log`",
            );
            return None;
        }
        Some(path)
    }

    /// Each reference is looked up in a set: linear in the number of packages.
    fn check_references(&mut self, indexes: &[Index], packages: &[Package]) {
        let defined_names: HashSet<&str> =
            indexes.iter().map(|index| index.name.as_str()).collect();
        let named: HashSet<&str> = packages
            .iter()
            .filter_map(|package| match &package.origin {
                PackageOrigin::Index {
                    index: Some(name), ..
                } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        for package in packages {
            if let PackageOrigin::Index {
                index: Some(name), ..
            } = &package.origin
                && !defined_names.contains(name.as_str())
            {
                let defined: Vec<&str> = indexes
                    .iter()
                    .take(20)
                    .map(|index| index.name.as_str())
                    .collect();
                let message = format!(
                    "package `{}` names index `{name}`, which `indexes` does not define",
                    package.name
                );
                if defined.is_empty() {
                    self.error_with_hint(package.span, message, "add it under `indexes`");
                } else {
                    self.error_with_hint(
                        package.span,
                        message,
                        format!("defined indexes: {}", defined.join(", ")),
                    );
                }
            }
        }
        for index in indexes.iter().filter(|index| index.explicit) {
            if !named.contains(index.name.as_str()) {
                self.error_with_hint(
                    index.span,
                    format!(
                        "index `{}` is explicit but no package names it, so it serves nothing",
                        index.name
                    ),
                    "name it from a package (`index: NAME`) or drop `explicit`",
                );
            }
        }
    }
}

/// Whether a field may carry credentials in its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credentials {
    /// The tool keeps them off command lines and masks them in output.
    Allowed,
    /// The URL would reach a node's command line.
    Refused,
}

/// Directories a toolkit prefix may not be: it would own them.
const SYSTEM_DIRECTORIES: &[&str] = &[
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/usr/bin",
    "/usr/include",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local",
    "/usr/local/bin",
    "/usr/local/lib",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/lib",
    "/var/log",
    "/var/tmp",
];

/// Trees the verification log may not be written into (and `/lib*`, see [`is_lib_tree`]).
const SYSTEM_TREES: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/boot", "/proc", "/sys", "/dev", "/lib", "/run",
];

/// `/lib`, `/lib64`, `/libx32`… and anything below them.
fn is_lib_tree(path: &Path) -> bool {
    path.components()
        .nth(1)
        .and_then(|c| c.as_os_str().to_str())
        .is_some_and(|first| first.starts_with("lib"))
}

/// The path part of a URL as written, e.g. `/a/b.run` for `https://h/a/b.run?x#y`.
fn url_path(text: &str) -> &str {
    let after_scheme = text.find("://").map_or(text, |at| &text[at + 3..]);
    let path_start = after_scheme.find('/').unwrap_or(after_scheme.len());
    let path = &after_scheme[path_start..];
    let end = path.find(['?', '#']).unwrap_or(path.len());
    &path[..end]
}

/// git's scp-like syntax, `user@host:path`: a user and a host of letters, digits,
/// `.`, `_`, `-` (not starting with `-`), and a path that does not start with `-`.
fn is_scp_like(text: &str) -> bool {
    let Some((user, rest)) = text.split_once('@') else {
        return false;
    };
    let Some((host, path)) = rest.split_once(':') else {
        return false;
    };
    let word = |part: &str| {
        !part.is_empty()
            && !part.starts_with('-')
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    word(user) && word(host) && !path.is_empty() && !path.starts_with('-')
}

/// Letters, digits and `_`, not starting with a digit, e.g. `HF_TOKEN`.
fn is_variable_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The Unicode bidirectional controls (embeddings, overrides, isolates and marks),
/// which reorder how text is shown, e.g. U+202E RIGHT-TO-LEFT OVERRIDE.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The first line of a parser's multi-line message, without its trailing colon.
fn first_line(text: &str) -> &str {
    text.lines()
        .next()
        .unwrap_or(text)
        .trim_end()
        .trim_end_matches(':')
}

/// The longest duration a manifest may say: 7 days. A verification that waits longer
/// is a mistake, and the bound keeps every deadline computed from it representable.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parse `90s`, `10m`, `1h30m`, `500ms`, at most [`MAX_DURATION`]. On failure,
/// returns a hint.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_duration_unbounded(text)?;
    if duration > MAX_DURATION {
        return Err("a duration is at most 7 days (`168h`)".to_string());
    }
    Ok(duration)
}

fn parse_duration_unbounded(text: &str) -> Result<Duration, String> {
    let too_long = || "a duration is at most 7 days (`168h`)".to_string();
    let compact = text.trim();
    if compact.contains(' ') {
        return Err(format!(
            "write it without spaces and with a unit letter, e.g. `{}`",
            suggest_duration(compact)
        ));
    }
    if let Some(millis) = compact.strip_suffix("ms") {
        if millis.is_empty() || !millis.bytes().all(|b| b.is_ascii_digit()) {
            return Err("e.g. `500ms`".to_string());
        }
        return millis
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| too_long());
    }
    let mut total = 0u64;
    let mut number = String::new();
    let mut seen_unit = false;
    for ch in compact.chars() {
        if ch.is_ascii_digit() {
            number.push(ch);
            continue;
        }
        let factor = match ch {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err("units are `h`, `m`, `s` and `ms`".to_string()),
        };
        if number.is_empty() {
            return Err("a number comes before each unit".to_string());
        }
        let value: u64 = number.parse().map_err(|_| too_long())?;
        total = value
            .checked_mul(factor)
            .and_then(|seconds| total.checked_add(seconds))
            .ok_or_else(too_long)?;
        number.clear();
        seen_unit = true;
    }
    if !number.is_empty() {
        return Err(format!(
            "a bare number has no unit: write `{number}s` or `{number}m`"
        ));
    }
    if !seen_unit || total == 0 {
        return Err("a timeout is longer than zero".to_string());
    }
    Ok(Duration::from_secs(total))
}

fn suggest_duration(text: &str) -> String {
    let mut parts = text.split_whitespace();
    let number = parts.next().unwrap_or("10");
    let unit = match parts.next().unwrap_or("m").chars().next() {
        Some('h') => "h",
        Some('s') => "s",
        _ => "m",
    };
    format!("{number}{unit}")
}

/// The allowed key nearest to `key` by edit distance, when close enough to be a typo.
fn closest<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    // No key of the schema is longer than 20 characters: a longer one is no typo, and
    // the distance would cost its length times each candidate's.
    if key.chars().count() > 64 {
        return None;
    }
    allowed
        .iter()
        .map(|candidate| (edit_distance(key, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= 2.max(candidate.len() / 4))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current.push(
                (previous[j] + cost)
                    .min(previous[j + 1] + 1)
                    .min(current[j] + 1),
            );
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("10 minutes").unwrap_err().contains("`10m`"));
        assert!(parse_duration("600").unwrap_err().contains("`600s`"));
    }

    /// See: issue 9 — durations are bounded, and overflow is an error, not a panic.
    #[test]
    fn durations_are_bounded() {
        assert_eq!(parse_duration("168h").unwrap(), MAX_DURATION);
        assert!(parse_duration("169h").unwrap_err().contains("7 days"));
        assert!(parse_duration("99999999999999999999h").is_err());
        assert!(parse_duration("18446744073709551615h").is_err());
        assert!(parse_duration("99999999999999999999ms").is_err());
        assert!(parse_duration("ms").is_err());
    }

    /// Found by the fuzz harness: pep508_rs panics on these names; they are errors.
    #[test]
    fn requirement_names_that_panic_the_parser_are_refused() {
        let text = "schema: 1\nname: x\ntarget: { python: /opt/e/bin/python3 }\noverrides:\n  - { requirement: \"fl..==1\", reason: r }\n";
        assert!(load_str(text, "x.yaml", None).is_err());
    }

    #[test]
    fn scp_like_git_urls() {
        assert!(is_scp_like("git@github.com:sgl-project/sglang"));
        assert!(!is_scp_like("-oProxyCommand=x@host:repo"));
        assert!(!is_scp_like("git@-host:repo"));
        assert!(!is_scp_like("git@host:-repo"));
    }

    #[test]
    fn typo_suggestions() {
        assert_eq!(closest("toolkti", TOP_KEYS), Some("toolkit"));
        assert_eq!(closest("zzzzzz", TOP_KEYS), None);
    }
}
