//! Output of `upgrade validate`.

use serde::Serialize;

use super::text_value;
use crate::manifest::Diagnostic;

/// What validating one file found.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The manifest is valid.
    Valid,
    /// The manifest has these located problems.
    Invalid(Vec<Diagnostic>),
    /// The file could not be read (the rendered error chain).
    Unreadable(String),
}

/// Text output: `ok` lines on stdout, located problems on stderr.
pub fn text(results: &[(String, Outcome)]) -> (String, String) {
    let (mut out, mut err) = (String::new(), String::new());
    for (file, outcome) in results {
        match outcome {
            Outcome::Valid => out.push_str(&format!("ok: {}\n", text_value(file))),
            Outcome::Invalid(diagnostics) => {
                for diagnostic in diagnostics {
                    err.push_str(&format!(
                        "{}:{}: error: {}\n",
                        text_value(&diagnostic.file),
                        diagnostic.span,
                        text_value(&diagnostic.message)
                    ));
                    if let Some(hint) = &diagnostic.hint {
                        err.push_str(&format!("  hint: {}\n", text_value(hint)));
                    }
                }
                let count = diagnostics.len();
                err.push_str(&format!(
                    "{}: {count} problem{}\n",
                    text_value(file),
                    if count == 1 { "" } else { "s" }
                ));
            }
            Outcome::Unreadable(error) => err.push_str(&format!("error: {}\n", text_value(error))),
        }
    }
    (out, err)
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    line: usize,
    column: usize,
    message: &'a str,
    hint: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonFile<'a> {
    file: &'a str,
    valid: bool,
    error: Option<&'a str>,
    diagnostics: Vec<JsonDiagnostic<'a>>,
}

/// JSON output: one document listing every file.
pub fn json(results: &[(String, Outcome)]) -> String {
    let files: Vec<JsonFile<'_>> = results
        .iter()
        .map(|(file, outcome)| {
            let (error, diagnostics) = match outcome {
                Outcome::Valid => (None, Vec::new()),
                Outcome::Unreadable(error) => (Some(error.as_str()), Vec::new()),
                Outcome::Invalid(diagnostics) => (
                    None,
                    diagnostics
                        .iter()
                        .map(|d| JsonDiagnostic {
                            line: d.span.line,
                            column: d.span.column,
                            message: &d.message,
                            hint: d.hint.as_deref(),
                        })
                        .collect(),
                ),
            };
            JsonFile {
                file,
                valid: matches!(outcome, Outcome::Valid),
                error,
                diagnostics,
            }
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&serde_json::json!({ "files": files }))
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
    text.push('\n');
    text
}
