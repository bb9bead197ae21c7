//! `rules`: a user rules directory laid over the embedded rule tables, relative to the
//! manifest's directory; and, at `upgrade validate`, the values the tables must know: a
//! `toolkit.version` NVIDIA released, `target.gpu_arch` entries that are GPUs.

use super::*;
use crate::rules::{
    CUDA_ARCH_FILE, CUDA_DRIVER_FILE, CUDA_UPDATES_FILE, RuleSet, USER_RULES, file_name,
};

impl Checker {
    /// The `rules:` directory: absolute, or resolved against the manifest's directory,
    /// where it must exist (a manifest read from git has no directory on disk: the
    /// path is kept as written).
    pub(super) fn rules_dir(&mut self, node: &Node) -> Option<PathBuf> {
        self.spans.insert("rules", node.span);
        let text = self.line(node, "rules")?;
        let path = PathBuf::from(&text);
        let full = match &self.base_dir {
            Some(base) if path.is_relative() => base.join(&path),
            _ => path.clone(),
        };
        if (self.base_dir.is_some() || path.is_absolute()) && !full.is_dir() {
            self.error_with_hint(
                node.span,
                format!(
                    "rules directory `{text}` does not exist (looked for `{}`)",
                    full.display()
                ),
                format!(
                    "`rules:` names a directory, relative to the manifest's, holding any of {}",
                    crate::rules::RULE_FILES.join(", ")
                ),
            );
            return None;
        }
        Some(full)
    }

    /// The rule tables the manifest's values are checked against: the embedded ones,
    /// the `rules:` directory, then `validate --rules DIR`. When the user's files do
    /// not load, `validate` reports why at `rules:` (and checks nothing against the
    /// tables); the other verbs word their hints with the embedded tables.
    pub(super) fn rule_set(&mut self) -> Option<&RuleSet> {
        if self.rule_set.is_none() {
            let dirs: Vec<PathBuf> = self
                .rules_dir
                .iter()
                .chain(self.extra_rules.iter())
                .cloned()
                .collect();
            let loaded = match RuleSet::load(dirs.iter().map(PathBuf::as_path)) {
                Ok(rules) => Some(rules),
                Err(error) => {
                    if self.validate {
                        let at = self
                            .spans
                            .get("rules")
                            .copied()
                            .unwrap_or(Span { line: 1, column: 1 });
                        self.error(
                            at,
                            format!(
                                "the rules do not load: {}",
                                crate::text::error_chain(&error).replace("\n  caused by:", ":")
                            ),
                        );
                    }
                    // `validate` checks nothing against tables it was not given; the
                    // other verbs only word hints with them, and load the user's rules
                    // (and report why they fail) where they apply them.
                    match self.validate {
                        true => None,
                        false => RuleSet::embedded().ok(),
                    }
                }
            };
            self.rule_set = Some(loaded);
        }
        self.rule_set.as_ref().and_then(Option::as_ref)
    }

    /// `validate`: a `toolkit.version` no table lists, and `target.gpu_arch` entries
    /// that are no GPU's, each with the nearest the tables know.
    pub(super) fn check_known_values(&mut self, toolkit: Option<&Toolkit>) {
        let at_version = self
            .spans
            .get("toolkit.version")
            .copied()
            .unwrap_or(Span { line: 1, column: 1 });
        let arch_spans = std::mem::take(&mut self.arch_spans);
        let Some(rules) = self.rule_set() else {
            return;
        };
        let mut found = Vec::new();
        if let Some(toolkit) = toolkit
            && !rules.knows_toolkit(&toolkit.version)
        {
            let version = &toolkit.version;
            found.push((
                at_version,
                format!(
                    "toolkit {version} is not a CUDA release the rules know; nearest: {}",
                    listed(&rules.nearest_toolkits(version))
                ),
                format!(
                    "for a release NVIDIA published after this build, add a row to `{}` (the update, its nvcc build, a `source:`) and to `{}` (its minimum driver) in {USER_RULES}",
                    file_name(CUDA_UPDATES_FILE),
                    file_name(CUDA_DRIVER_FILE),
                ),
            ));
        }
        for (arch, span) in &arch_spans {
            let device = GpuArch::new(arch.major(), arch.minor());
            if arch.variant().is_some() && rules.arches.known(&device).is_some() {
                found.push((
                    *span,
                    format!("{arch}: a compilation target of {device}, not a GPU architecture"),
                    format!("name the GPU as {device}"),
                ));
            } else if arch.variant().is_some() || rules.arches.known(arch).is_none() {
                found.push((
                    *span,
                    format!(
                        "{arch}: not a GPU architecture the rules know; nearest: {}",
                        listed(&rules.nearest_arches(arch))
                    ),
                    format!(
                        "for a GPU NVIDIA published after this build, add a row to `{}` (under `architectures:`, and its name in the `toolkits:` rows that support it) in {USER_RULES}",
                        file_name(CUDA_ARCH_FILE)
                    ),
                ));
            }
        }
        for (span, message, hint) in found {
            self.error_with_hint(span, message, hint);
        }
    }
}

/// `a, b, c`.
fn listed<T: ToString>(values: &[T]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
