//! `toolkit`: the CUDA toolkit to install, its prefix, installer and source (a
//! runfile URL with its digest or an apt package).

use super::*;

impl Checker {
    pub(super) fn toolkit(&mut self, node: &Node) -> Option<Toolkit> {
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
        let version_node = self.require(&mut fields, "version");
        if let Some(n) = version_node {
            self.spans.insert("toolkit.version", n.span);
        }
        let version = version_node.and_then(|n| self.parsed::<CudaVersion>(n, "toolkit.version"));
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
        if let Some(n) = package_node {
            self.spans.insert("toolkit.package", n.span);
        }
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
    pub(super) fn toolkit_prefix(&mut self, node: &Node) -> Option<PathBuf> {
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
    pub(super) fn apt_package(&mut self, node: &Node) -> Option<String> {
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

    pub(super) fn source(&mut self, node: &Node) -> Option<Source> {
        const KEYS: &[&str] = &["url", "sha256"];
        let mut fields = self.fields(node, "toolkit.source", KEYS)?;
        let url_node = self.require(&mut fields, "url");
        if let Some(n) = url_node {
            self.spans.insert("toolkit.source.url", n.span);
        }
        let url = url_node.and_then(|n| self.runfile_url(n));
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
    pub(super) fn url(
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
    pub(super) fn runfile_url(&mut self, node: &Node) -> Option<String> {
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
}

/// Whether a field may carry credentials in its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Credentials {
    /// The tool keeps them off command lines and masks them in output.
    Allowed,
    /// The URL would reach a node's command line.
    Refused,
}

/// Directories a toolkit prefix may not be: it would own them.
pub(super) const SYSTEM_DIRECTORIES: &[&str] = &[
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

/// The path part of a URL as written, e.g. `/a/b.run` for `https://h/a/b.run?x#y`.
pub(super) fn url_path(text: &str) -> &str {
    let after_scheme = text.find("://").map_or(text, |at| &text[at + 3..]);
    let path_start = after_scheme.find('/').unwrap_or(after_scheme.len());
    let path = &after_scheme[path_start..];
    let end = path.find(['?', '#']).unwrap_or(path.len());
    &path[..end]
}
