//! Reading a rule file: YAML with a `schema` field, parsed with line and column in errors.

use serde::de::DeserializeOwned;

use super::error::RulesError;

/// The only rule-file schema this build reads.
const RULES_SCHEMA: u32 = 1;

/// A rule file's top level: it says its schema.
pub(super) trait RuleFile: DeserializeOwned {
    /// The file's `schema`, e.g. `1`.
    fn schema(&self) -> u32;
}

/// Parse a rule file's text; `file` names it in errors, e.g. `manifests/rules/abi-pins.yaml`.
pub(super) fn parse<T: RuleFile>(text: &str, file: &str) -> Result<T, RulesError> {
    let parsed: T = serde_yaml_ng::from_str(text).map_err(|source| RulesError::Parse {
        file: file.to_string(),
        source,
    })?;
    if parsed.schema() != RULES_SCHEMA {
        return Err(RulesError::Invalid {
            file: file.to_string(),
            message: format!("unsupported schema `{}`", parsed.schema()),
        });
    }
    Ok(parsed)
}
