//! `indexes`: the package indexes, their names, URLs and whether they are explicit.

use super::toolkit::Credentials;
use super::*;

impl Checker {
    pub(super) fn indexes(&mut self, node: &Node) -> Vec<Index> {
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

    pub(super) fn index_name(&mut self, node: &Node) -> Option<String> {
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
}
