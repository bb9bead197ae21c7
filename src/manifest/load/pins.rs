//! `overrides` and `constraints`: requirements that replace or narrow the packages'
//! own, each with its reason.

use super::*;

impl Checker {
    pub(super) fn pins(&mut self, node: &Node, section: &'static str) -> Vec<Pin> {
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
}
