//! A guard in front of `pep508_rs`: version 0.9 panics instead of returning an error on
//! some malformed requirements — a name or extra that starts or ends with `-`, `.` or
//! `_` (e.g. `flash..==1`, `x[a-]`), and non-ASCII text in a marker (a byte index
//! inside a character). Found by the fuzz harness (issue 9). [`parse_requirement`]
//! refuses those shapes first and contains any other panic of the parser as an error;
//! every requirement read from outside (manifests, index metadata, probed facts) goes
//! through it.

use std::str::FromStr;

use pep508_rs::Requirement;

/// Failed to parse a requirement, e.g. `flash..==1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// A name or extra the parser would panic on.
    #[error(transparent)]
    MalformedName(#[from] MalformedNameError),
    /// Text outside ASCII, which the parser can slice inside a character.
    #[error("expected ASCII text, found `{0}`")]
    NotAscii(char),
    /// The parser's own error.
    #[error("{0}")]
    Invalid(String),
    /// The parser panicked on a shape not refused above.
    #[error("the PEP 508 parser failed on this text")]
    ParserPanicked,
}

/// Parse a PEP 508 requirement without ever panicking, e.g. `torch==2.9.1`.
pub fn parse_requirement(text: &str) -> Result<Requirement, RequirementError> {
    check_name(text)?;
    if let Some(c) = text.chars().find(|c| !c.is_ascii()) {
        return Err(RequirementError::NotAscii(c));
    }
    if let Some((_, rest)) = text.split_once('[') {
        let extras = rest.split(']').next().unwrap_or_default();
        for extra in extras.split(',') {
            check_name(extra.trim())?;
        }
    }
    match std::panic::catch_unwind(|| Requirement::from_str(text)) {
        Ok(Ok(requirement)) => Ok(requirement),
        Ok(Err(error)) => Err(RequirementError::Invalid(error.to_string())),
        Err(_) => Err(RequirementError::ParserPanicked),
    }
}

/// The requirement's leading name was refused before parsing, e.g. `nvidia-`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the package name `{name}` does not start and end with a letter or digit")]
pub struct MalformedNameError {
    /// e.g. `nvidia-`.
    pub name: String,
}

/// Check the name at the start of a PEP 508 requirement, e.g. `Err` for `fl..==1`.
pub fn check_name(text: &str) -> Result<(), MalformedNameError> {
    let trimmed = text.trim_start();
    let end = trimmed
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
        .unwrap_or(trimmed.len());
    let name = &trimmed[..end];
    let separator = |c: char| matches!(c, '-' | '.' | '_');
    if name.starts_with(separator) || name.ends_with(separator) {
        return Err(MalformedNameError {
            name: name.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_panic_the_parser_are_refused() {
        assert!(check_name("flash..==1").is_err());
        assert!(check_name("nvidia- ; extra == 'x'").is_err());
        assert!(check_name("flashinfer-python==0.6.4").is_ok());
        assert!(check_name("").is_ok());
        assert!(parse_requirement("x[nvjitlinkGPU-fefa1f67-]").is_err());
        assert!(parse_requirement("nccl==2.28.9; platform_system == \"Linux\u{fffd}\"").is_err());
        assert!(parse_requirement("torch==2.9.1 ; python_version >= '3.10'").is_ok());
    }
}
