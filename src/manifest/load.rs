//! Loading a manifest: YAML tree → typed [`Manifest`], with every problem located.
//!
//! The walk never stops at the first problem: each section is checked on its own, and
//! references between sections (an index a package names) are checked at the end, so
//! one run of `upgrade validate` lists everything that is wrong with a file.
//!
//! This file reads the text and holds the [`Checker`] with the checks every section
//! shares (types, strings, paths, unknown keys); each top-level section has its
//! validator in its own file under `load/` (`target`, `toolkit`, `indexes`, `packages`,
//! `pins` for `overrides` and `constraints`, `ldconfig`, `env`, `verify`, `service`,
//! `benchmark`, `rules`), an
//! `impl Checker` block that [`Checker::manifest`] calls. A new section is a new file,
//! a key in `TOP_KEYS` and one line in `manifest`.

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
use crate::text::unsafe_kind;

mod benchmark;
mod consistency;
mod env;
mod indexes;
mod ldconfig;
mod packages;
mod pins;
mod rules;
mod service;
mod target;
mod toolkit;
mod verify;

pub(crate) use env::is_variable_name;

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
    load_with_text(source).map(|(manifest, _)| manifest)
}

/// [`load`], with the text the manifest was read from (its sha256 is the one a lock
/// records).
pub fn load_with_text(source: &ManifestSource) -> Result<(Manifest, String), ManifestError> {
    match source {
        ManifestSource::Path(path) => {
            let text = read_text(path)?;
            let manifest = load_str(&text, &path.display().to_string(), Some(&base_dir(path)))?;
            Ok((manifest, text))
        }
        ManifestSource::GitRevision { rev, path } => {
            let bytes = match read_git_file(rev, path)? {
                GitFile::Found(bytes) => bytes,
                GitFile::Missing(message) => {
                    return Err(ManifestError::GitShow {
                        rev: rev.clone(),
                        path: path.clone(),
                        message,
                    });
                }
            };
            let file = format!("{rev}:{path}");
            if bytes.len() > MAX_MANIFEST_BYTES {
                return Err(ManifestError::TooLarge {
                    file,
                    size: bytes.len() as u64,
                });
            }
            let text = decode(bytes, &file)?;
            // Patches are looked up at that revision's tree, which is not on disk.
            let manifest = load_str(&text, &file, None)?;
            Ok((manifest, text))
        }
    }
}

/// What git holds at `REV:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitFile {
    /// The file's bytes.
    Found(Vec<u8>),
    /// The revision exists and has no such file; what git said, e.g. `fatal: path
    /// 'm.lock.json' does not exist in 'HEAD'`.
    Missing(String),
}

/// The file `path` at git revision `rev` (`git show REV:PATH`, run in the current
/// directory), the one reader of files from git: [`GitFile::Missing`] when the revision
/// exists but has no such file; an error when `rev` starts with `-`, git cannot run, or
/// the revision is unknown.
pub fn read_git_file(rev: &str, path: &str) -> Result<GitFile, ManifestError> {
    let failed = |message: String| ManifestError::GitShow {
        rev: rev.to_string(),
        path: path.to_string(),
        message,
    };
    if rev.starts_with('-') {
        return Err(failed("a revision does not start with `-`".to_string()));
    }
    // `--end-of-options`: whatever the argument says, git reads it as a revision.
    let output = Command::new("git")
        .arg("show")
        .arg("--end-of-options")
        .arg(format!("{rev}:{path}"))
        .output()
        .map_err(|error| failed(error.to_string()))?;
    if output.status.success() {
        return Ok(GitFile::Found(output.stdout));
    }
    let message = String::from_utf8_lossy(&output.stderr).trim().to_string();
    // The revision names a tree, so the path is what is missing.
    let revision = Command::new("git")
        .arg("rev-parse")
        .arg("--verify")
        .arg("--quiet")
        .arg("--end-of-options")
        .arg(format!("{rev}^{{tree}}"))
        .output()
        .map_err(|error| failed(error.to_string()))?;
    if revision.status.success() {
        Ok(GitFile::Missing(message))
    } else {
        Err(failed(message))
    }
}

/// The largest manifest read, 16 MiB: the shipped ones are a few kilobytes, and the
/// bound keeps loading a hostile file within a small multiple of this in memory.
pub const MAX_MANIFEST_BYTES: usize = 16 * 1024 * 1024;

/// The name of the one index a manifest without `indexes:` gets: the index pip is
/// configured with, recorded by this name in its lock.
pub const DEFAULT_INDEX_NAME: &str = "default";

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
    load_with_text(&ManifestSource::Path(path.to_path_buf())).map(|(manifest, _)| manifest)
}

/// `upgrade validate`'s load: [`load_file`] plus the checks of what only the manifest's
/// own description of the node contradicts (`target.driver` below the toolkit's
/// minimum driver), and of values the rule tables do not know (a `toolkit.version`
/// NVIDIA never released, a `target.gpu_arch` no GPU has). The tables are the embedded
/// ones with the manifest's `rules:` directory and then `rules` (`validate --rules DIR`)
/// laid over them. A node's facts replace `target.driver` when a plan probes it, so
/// `plan` and `apply` do not refuse such a manifest; the resolver explains the
/// conflict where it applies.
pub fn validate_file(path: &Path, rules: Option<&Path>) -> Result<Manifest, ManifestError> {
    let text = read_text(path)?;
    load_checked(
        &text,
        &path.display().to_string(),
        Some(&base_dir(path)),
        Some(Validate { rules }),
    )
}

/// What `validate` adds to a load: the checks of the manifest's own node description
/// and of values the rule tables do not know.
#[derive(Debug, Clone, Copy)]
struct Validate<'a> {
    /// A user rules directory laid over the manifest's (`validate --rules DIR`).
    rules: Option<&'a Path>,
}

/// Load a manifest from text. `file` names it in diagnostics; `base_dir`, when given,
/// is where relative patch paths must exist.
pub fn load_str(
    text: &str,
    file: &str,
    base_dir: Option<&Path>,
) -> Result<Manifest, ManifestError> {
    load_checked(text, file, base_dir, None)
}

fn load_checked(
    text: &str,
    file: &str,
    base_dir: Option<&Path>,
    validate: Option<Validate<'_>>,
) -> Result<Manifest, ManifestError> {
    let mut checker = Checker {
        validate: validate.is_some(),
        extra_rules: validate.and_then(|validate| validate.rules.map(Path::to_path_buf)),
        rules_dir: None,
        rule_set: None,
        arch_spans: Vec::new(),
        file: file.to_string(),
        base_dir: base_dir.map(Path::to_path_buf),
        diagnostics: Vec::new(),
        index_spans: HashMap::new(),
        spans: HashMap::new(),
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
    "prereleases",
    "rules",
    "target",
    "toolkit",
    "indexes",
    "packages",
    "overrides",
    "constraints",
    "ldconfig",
    "env",
    "verify",
    "service",
    "benchmark",
];

struct Checker {
    file: String,
    base_dir: Option<PathBuf>,
    diagnostics: Vec<Diagnostic>,
    /// Where each package's `index:` value was written, for the reference check.
    index_spans: HashMap<PackageName, Span>,
    /// Where keys that later checks compare were written, e.g. `toolkit.version`.
    spans: HashMap<&'static str, Span>,
    /// `upgrade validate`: also the checks of the manifest's own node description and of
    /// values the rule tables do not know.
    validate: bool,
    /// `validate --rules DIR`: laid over the manifest's `rules:`.
    extra_rules: Option<PathBuf>,
    /// The manifest's `rules:` directory, resolved against its directory.
    rules_dir: Option<PathBuf>,
    /// The rule tables, once a check needed them (`None` inside: they did not load).
    rule_set: Option<Option<crate::rules::RuleSet>>,
    /// Each `target.gpu_arch` entry and where it was written.
    arch_spans: Vec<(GpuArch, Span)>,
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
    /// `multi_line`, every other line break a reader knows (U+2028, U+2029, U+0085: a
    /// `.pth` file or a requirements file would start a new line there) and the
    /// bidirectional controls (e.g. U+202E) everywhere.
    fn check_characters(&mut self, span: Span, what: &str, text: &str, multi_line: bool) -> bool {
        let bad = text.chars().enumerate().find_map(|(position, c)| {
            let allowed = multi_line && matches!(c, '\t' | '\n');
            unsafe_kind(c)
                .filter(|_| !allowed)
                .map(|kind| (position, c, kind))
        });
        match bad {
            None => true,
            Some((position, c, kind)) => {
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
        let prereleases = fields
            .take("prereleases")
            .and_then(|node| self.parsed::<Prereleases>(node, "prereleases"));
        let rules = fields.take("rules").and_then(|node| self.rules_dir(node));
        self.rules_dir.clone_from(&rules);
        let target = self
            .require(&mut fields, "target")
            .and_then(|node| self.target(node));
        let toolkit = fields.take("toolkit").and_then(|node| self.toolkit(node));
        // No `indexes:` means the index pip is configured with, as pip itself would use.
        let indexes = fields
            .take("indexes")
            .map(|node| self.indexes(node))
            .unwrap_or_else(|| {
                vec![Index {
                    name: DEFAULT_INDEX_NAME.to_string(),
                    url: None,
                    explicit: false,
                    provenance: None,
                    span: Span::default(),
                }]
            });
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
        let service = fields.take("service").and_then(|node| self.service(node));
        let benchmark = fields
            .take("benchmark")
            .and_then(|node| self.benchmark(node));
        self.finish(fields);

        self.check_references(&indexes, &packages);
        self.check_toolkit_consistency(target.as_ref(), toolkit.as_ref());
        if self.validate {
            self.check_known_values(toolkit.as_ref());
        }
        schema?;
        Some(Manifest {
            name: name?,
            description,
            upgrade,
            prereleases: prereleases.unwrap_or_default(),
            rules,
            target: target?,
            toolkit,
            indexes,
            packages,
            overrides,
            constraints,
            ldconfig,
            env,
            verify,
            service,
            benchmark,
        })
    }
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
    fn typo_suggestions() {
        assert_eq!(closest("toolkti", TOP_KEYS), Some("toolkit"));
        assert_eq!(closest("zzzzzz", TOP_KEYS), None);
    }
}
