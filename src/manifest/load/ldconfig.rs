//! `ldconfig`: the library directories the tool registers with the dynamic linker.

use super::*;

impl Checker {
    pub(super) fn ldconfig(&mut self, node: &Node) -> Option<Ldconfig> {
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
}
