//! Loading a manifest: YAML tree → typed [`Manifest`], with every problem located.
//!
//! The walk never stops at the first problem: each section is checked on its own, and
//! references between sections (an index a package names) are checked at the end, so
//! one run of `upgrade validate` lists everything that is wrong with a file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use pep440_rs::VersionSpecifiers;
use pep508_rs::{PackageName, Requirement};

use super::error::{Diagnostic, ManifestError};
use super::model::*;
use super::yaml::{self, Key, Node, NodeKind, Span};
use crate::cuda::{CudaVersion, DriverVersion, GpuArch};
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
            let output = Command::new("git")
                .arg("show")
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
            let text = String::from_utf8_lossy(&output.stdout);
            // Patches are looked up at that revision's tree, which is not on disk.
            load_str(&text, &format!("{rev}:{path}"), None)
        }
    }
}

/// Load a manifest file; patch files are checked relative to its directory.
pub fn load_file(path: &Path) -> Result<Manifest, ManifestError> {
    let text = fs_err::read_to_string(path).map_err(|source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_str(&text, &path.display().to_string(), Some(&base))
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
    fn error(&mut self, span: Span, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.clone(),
            span,
            message: message.into(),
            hint: None,
        });
    }

    fn error_with_hint(&mut self, span: Span, message: impl Into<String>, hint: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.clone(),
            span,
            message: message.into(),
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

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.kind {
            NodeKind::Scalar(scalar) if !node.is_null() => Some(scalar.text.clone()),
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
        let text = self.non_empty_string(node, what)?;
        let path = PathBuf::from(&text);
        if !path.is_absolute() {
            self.error_with_hint(
                node.span,
                format!("expected `{what}` to be an absolute path, found `{text}`"),
                "paths on a node are absolute: the tool does not guess a working directory",
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
        items
            .iter()
            .filter_map(|item| {
                Some((
                    self.non_empty_string(item, &format!("{what}[]"))?,
                    item.span,
                ))
            })
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
            .and_then(|node| self.non_empty_string(node, "name"));
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
        ];
        let mut fields = self.fields(node, "target", KEYS)?;
        let python = self
            .require(&mut fields, "python")
            .and_then(|n| self.absolute_path(n, "target.python"));
        let base_python = fields
            .take("base_python")
            .and_then(|n| self.absolute_path(n, "target.base_python"));
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
        self.finish(fields);
        Some(Target {
            python: python?,
            base_python,
            python_version,
            glibc,
            driver,
            gpu_arch,
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
            .and_then(|n| self.absolute_path(n, "toolkit.prefix"));
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
        let package = fields
            .take("package")
            .and_then(|n| self.non_empty_string(n, "toolkit.package"));
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
            Some(InstallerKind::Apt) if package.is_none() => {
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

    fn source(&mut self, node: &Node) -> Option<Source> {
        const KEYS: &[&str] = &["url", "sha256"];
        let mut fields = self.fields(node, "toolkit.source", KEYS)?;
        let url = self
            .require(&mut fields, "url")
            .and_then(|n| self.url(n, "toolkit.source.url"));
        let sha256 = self
            .require(&mut fields, "sha256")
            .and_then(|n| self.parsed::<Sha256>(n, "toolkit.source.sha256"));
        self.finish(fields);
        Some(Source {
            url: url?,
            sha256: sha256?,
        })
    }

    fn url(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.non_empty_string(node, what)?;
        match url::Url::parse(&text) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https" | "file") => Some(text),
            Ok(parsed) => {
                self.error(node.span, format!("invalid `{what}` `{text}`: expected an `http`, `https` or `file` URL, found scheme `{}`", parsed.scheme()));
                None
            }
            Err(error) => {
                self.error(node.span, format!("invalid `{what}` `{text}`: {error}"));
                None
            }
        }
    }

    fn indexes(&mut self, node: &Node) -> Vec<Index> {
        const KEYS: &[&str] = &["name", "url", "explicit", "provenance"];
        let Some(items) = self.sequence(node, "indexes") else {
            return Vec::new();
        };
        let mut indexes: Vec<Index> = Vec::new();
        for item in items {
            let Some(mut fields) = self.fields(item, "indexes[]", KEYS) else {
                continue;
            };
            let name_node = self.require(&mut fields, "name");
            let name = name_node.and_then(|n| self.index_name(n));
            let url = fields
                .take("url")
                .and_then(|n| self.url(n, "indexes[].url"));
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
            if let Some(first) = indexes.iter().find(|index| index.name == name) {
                let first = first.span;
                self.error(
                    name_node.span,
                    format!("duplicate index name `{name}` (first defined at {first})"),
                );
                continue;
            }
            if url.is_none()
                && let Some(first) = indexes.iter().find(|index| index.url.is_none())
            {
                let first = first.span;
                self.error(name_node.span, format!("index `{name}` has no `url`, and `{}` already stands for pip's configured default index (at {first})", first_name(&indexes)));
                continue;
            }
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
        let name = self.non_empty_string(node, "indexes[].name")?;
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
        let mut seen: Vec<(&Key, PackageName)> = Vec::new();
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
            if let Some((first, _)) = seen.iter().find(|(_, seen_name)| *seen_name == name) {
                // An identical key was already reported by the parser as a duplicate.
                if first.text != key.text {
                    let first = first.span;
                    self.error(key.span, format!("package `{name}` is listed twice (first at {first}; names compare after PEP 503 normalization)"));
                }
                continue;
            }
            seen.push((key, name.clone()));
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
            self.non_empty_string(n, &format!("{what}.index"))
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
                let url = self.url_or_scp(git, &format!("{what}.git"));
                let rev = match rev {
                    Some(rev) => self.non_empty_string(rev, &format!("{what}.rev")),
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

    fn url_or_scp(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.non_empty_string(node, what)?;
        // `git@host:org/repo` is git's scp-like syntax and is not a URL.
        if text.contains('@') && text.contains(':') && !text.contains("://") {
            return Some(text);
        }
        match url::Url::parse(&text) {
            Ok(_) => Some(text),
            Err(_) if Path::new(&text).is_absolute() => Some(text),
            Err(error) => {
                self.error(node.span, format!("invalid `{what}` `{text}`: {error}"));
                None
            }
        }
    }

    fn relative_path(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.non_empty_string(node, what)?;
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
                let text = self.non_empty_string(n, &format!("{context}.requirement"))?;
                match Requirement::from_str(&text) {
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
                        let path = PathBuf::from(&text);
                        if path.is_absolute() {
                            Some(path)
                        } else {
                            self.error(span, format!("expected `ldconfig.paths` entries to be absolute paths, found `{text}`"));
                            None
                        }
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
        if !file.starts_with("/etc/ld.so.conf.d")
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
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                self.error(key.span, format!("invalid environment variable name `{name}`: expected letters, digits and `_`, not starting with a digit"));
                continue;
            }
            let what = format!("env.{name}");
            let var = match &value.kind {
                NodeKind::Scalar(scalar) if !value.is_null() => Some(EnvVar {
                    name: name.clone(),
                    value: EnvValue::Literal(scalar.text.clone()),
                    secret: false,
                }),
                NodeKind::Mapping(_) => {
                    let Some(mut fields) = self.fields(value, &what, KEYS) else {
                        continue;
                    };
                    let literal = fields
                        .take("value")
                        .and_then(|n| self.string(n, &format!("{what}.value")));
                    let from_env = fields
                        .take("from_env")
                        .and_then(|n| self.non_empty_string(n, &format!("{what}.from_env")));
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
        let launch = self
            .require(&mut fields, "launch")
            .and_then(|n| match &n.kind {
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
                    let text = self.non_empty_string(n, "verify.launch")?;
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
        let workdir = fields
            .take("workdir")
            .and_then(|n| self.absolute_path(n, "verify.workdir"));
        let log = self
            .require(&mut fields, "log")
            .and_then(|n| self.absolute_path(n, "verify.log"));
        let ready = self
            .require(&mut fields, "ready")
            .and_then(|n| self.non_empty_string(n, "verify.ready"));
        let fail = fields
            .take("fail")
            .map(|n| match &n.kind {
                NodeKind::Scalar(_) => self
                    .non_empty_string(n, "verify.fail")
                    .into_iter()
                    .collect(),
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
        let health = fields.take("health").and_then(|n| {
            let text = self.url(n, "verify.health")?;
            if text.starts_with("file:") {
                self.error(
                    n.span,
                    format!("expected `verify.health` to be an `http` URL, found `{text}`"),
                );
                return None;
            }
            Some(text)
        });
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

    fn check_references(&mut self, indexes: &[Index], packages: &[Package]) {
        for package in packages {
            if let PackageOrigin::Index {
                index: Some(name), ..
            } = &package.origin
                && !indexes.iter().any(|index| &index.name == name)
            {
                let defined: Vec<&str> = indexes.iter().map(|index| index.name.as_str()).collect();
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
            let used = packages.iter().any(|package| matches!(&package.origin, PackageOrigin::Index { index: Some(name), .. } if name == &index.name));
            if !used {
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

fn first_name(indexes: &[Index]) -> String {
    indexes
        .iter()
        .find(|index| index.url.is_none())
        .map(|index| index.name.clone())
        .unwrap_or_default()
}

/// The first line of a parser's multi-line message, without its trailing colon.
fn first_line(text: &str) -> &str {
    text.lines()
        .next()
        .unwrap_or(text)
        .trim_end()
        .trim_end_matches(':')
}

/// Parse `90s`, `10m`, `1h30m`, `500ms`. On failure, returns a hint.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let compact = text.trim();
    if compact.contains(' ') {
        return Err(format!(
            "write it without spaces and with a unit letter, e.g. `{}`",
            suggest_duration(compact)
        ));
    }
    if let Some(millis) = compact.strip_suffix("ms") {
        return millis
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| "e.g. `500ms`".to_string());
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
        let value: u64 = number
            .parse()
            .map_err(|_| "a number comes before each unit".to_string())?;
        total = total.saturating_add(value.saturating_mul(factor));
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

    #[test]
    fn typo_suggestions() {
        assert_eq!(closest("toolkti", TOP_KEYS), Some("toolkit"));
        assert_eq!(closest("zzzzzz", TOP_KEYS), None);
    }
}
