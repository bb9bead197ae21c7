//! `packages`: each package's version, index, extras, or git source with its
//! patches; and the references between packages and `indexes`, checked once both
//! are read.

use super::toolkit::Credentials;
use super::*;

impl Checker {
    pub(super) fn packages(&mut self, node: &Node) -> Vec<Package> {
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

    pub(super) fn package(
        &mut self,
        name: PackageName,
        key: &Key,
        value: &Node,
    ) -> Option<Package> {
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
        if let Some((_, index_span)) = &index {
            self.index_spans.insert(name.clone(), *index_span);
        }

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
    pub(super) fn git_url(&mut self, node: &Node, what: &str) -> Option<String> {
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
    pub(super) fn git_rev(&mut self, node: &Node, what: &str) -> Option<String> {
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

    pub(super) fn relative_path(&mut self, node: &Node, what: &str) -> Option<String> {
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

    pub(super) fn patches(&mut self, node: &Node, what: &str) -> Vec<PathBuf> {
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

    pub(super) fn specifiers(&mut self, node: &Node, what: &str) -> Option<VersionSpecifiers> {
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

    pub(super) fn exact_version(&mut self, node: &Node, what: &str) -> Option<pep440_rs::Version> {
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

    /// Each reference is looked up in a set: linear in the number of packages.
    pub(super) fn check_references(&mut self, indexes: &[Index], packages: &[Package]) {
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
                // Located at the value, where the typo is; the key if no value was seen.
                let span = self
                    .index_spans
                    .get(&package.name)
                    .copied()
                    .unwrap_or(package.span);
                if defined.is_empty() {
                    self.error_with_hint(span, message, "add it under `indexes`");
                } else {
                    self.error_with_hint(
                        span,
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

/// git's scp-like syntax, `user@host:path`: a user and a host of letters, digits,
/// `.`, `_`, `-` (not starting with `-`), and a path that does not start with `-`.
pub(super) fn is_scp_like(text: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// See: issue 16 — an undefined `index:` is located at its value, where the typo is.
    #[test]
    fn an_undefined_index_is_located_at_its_name() {
        let text = "schema: 1\nname: x\ntarget: { python: /opt/ml-env/bin/python3 }\nindexes:\n  - name: default\npackages:\n  torch:\n    version: \"==2.9.1\"\n    index: pytorch-cu13O\n";
        let Err(ManifestError::Invalid { diagnostics, .. }) =
            super::super::load_str(text, "x.yaml", None)
        else {
            panic!("expected diagnostics");
        };
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        assert_eq!(
            diagnostics[0].span,
            Span {
                line: 9,
                column: 12
            }
        );
        assert!(diagnostics[0].message.contains("`pytorch-cu13O`"));
    }

    #[test]
    fn scp_like_git_urls() {
        assert!(is_scp_like("git@github.com:sgl-project/sglang"));
        assert!(!is_scp_like("-oProxyCommand=x@host:repo"));
        assert!(!is_scp_like("git@-host:repo"));
        assert!(!is_scp_like("git@host:-repo"));
    }
}
