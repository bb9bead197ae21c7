//! `target`: the node's interpreter, platform, driver and GPUs, and `upgrade`, the
//! version of this tool a manifest needs.

use super::*;

impl Checker {
    pub(super) fn tool_requirement(&mut self, node: &Node) -> Option<semver::VersionReq> {
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

    pub(super) fn target(&mut self, node: &Node) -> Option<Target> {
        const KEYS: &[&str] = &[
            "python",
            "base_python",
            "python_version",
            "glibc",
            "driver",
            "gpu_arch",
            "cuda_wheels",
            "env_scope",
            "keep_unlocked_packages",
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
        let driver_node = fields.take("driver");
        if let Some(n) = driver_node {
            self.spans.insert("target.driver", n.span);
        }
        let driver = driver_node.and_then(|n| self.parsed::<DriverVersion>(n, "target.driver"));
        let gpu_arch = fields
            .take("gpu_arch")
            .map(|n| {
                self.strings(n, "target.gpu_arch")
                    .into_iter()
                    .filter_map(|(text, span)| match text.parse::<GpuArch>() {
                        Ok(arch) => {
                            self.arch_spans.push((arch, span));
                            Some(arch)
                        }
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
        let env_scope = fields
            .take("env_scope")
            .and_then(|n| {
                let text = self.string(n, "target.env_scope")?;
                match text.as_str() {
                    "environment" => Some(EnvScope::Environment),
                    "interpreter" => Some(EnvScope::Interpreter),
                    _ => {
                        self.error(n.span, format!("invalid `target.env_scope` `{text}`: expected `environment` (only the target environment's interpreters) or `interpreter` (the `sitecustomize.py` it imports, shared by every environment of that interpreter)"));
                        None
                    }
                }
            })
            .unwrap_or_default();
        let keep_unlocked_packages = fields
            .take("keep_unlocked_packages")
            .and_then(|n| self.boolean(n, "target.keep_unlocked_packages"))
            .unwrap_or(false);
        self.finish(fields);
        Some(Target {
            python: python?,
            base_python,
            python_version,
            glibc,
            driver,
            gpu_arch,
            cuda_wheels,
            env_scope,
            keep_unlocked_packages,
        })
    }
}
