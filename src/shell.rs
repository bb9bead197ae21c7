//! POSIX shell words: the one quoting function and its inverse.
//!
//! Everything that reaches a shell — on this machine or over SSH — is rendered by
//! [`quote`]; nothing is pasted into a command line with `format!`. [`split`] reads a
//! command line written in a manifest (`verify.launch`) into argv without expanding
//! anything: no variables, no globs, no command substitution.

/// Failed to split a command line into words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// e.g. `python3 -c 'print(1)`.
    #[error("unterminated {quote} quote starting at character {offset}")]
    Unterminated {
        /// `single` or `double`.
        quote: &'static str,
        /// Byte offset of the opening quote.
        offset: usize,
    },
    /// e.g. `serve \` at the end.
    #[error("trailing backslash")]
    TrailingBackslash,
}

/// Quote one word for a POSIX shell, e.g. `it's` → `'it'\''s'`; safe words stay bare.
pub fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./-_".contains(&b));
    if safe {
        return word.to_string();
    }
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('\'');
    for ch in word.chars() {
        if ch == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(ch);
        }
    }
    quoted.push('\'');
    quoted
}

/// Split a command line into words the way a shell would, without any expansion:
/// `python3 -m x --name 'a b'` → `[python3, -m, x, --name, a b]`.
pub fn split(line: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.char_indices().peekable();
    while let Some((offset, ch)) = chars.next() {
        match ch {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, inner)) => word.push(inner),
                        None => {
                            return Err(SplitError::Unterminated {
                                quote: "single",
                                offset,
                            });
                        }
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, escaped @ ('"' | '\\' | '$' | '`'))) => word.push(escaped),
                            Some((_, '\n')) => {}
                            Some((_, other)) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => {
                                return Err(SplitError::Unterminated {
                                    quote: "double",
                                    offset,
                                });
                            }
                        },
                        Some((_, inner)) => word.push(inner),
                        None => {
                            return Err(SplitError::Unterminated {
                                quote: "double",
                                offset,
                            });
                        }
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, escaped)) => {
                    in_word = true;
                    word.push(escaped);
                }
                None => return Err(SplitError::TrailingBackslash),
            },
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Render argv as one shell line, every word through [`quote`].
pub fn join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|word| quote(word.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_leaves_safe_words_bare() {
        assert_eq!(quote("/usr/local/cuda-13.0"), "/usr/local/cuda-13.0");
        assert_eq!(quote("torch==2.9.1+cu130"), "torch==2.9.1+cu130");
    }

    #[test]
    fn quote_neutralises_metacharacters() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(quote("a\nb"), "'a\nb'");
    }

    #[test]
    fn split_reads_quotes_without_expanding() {
        assert_eq!(
            split("python3 -m sglang.launch_server --tp 8 --name 'a b' \"$HOME\"").unwrap(),
            [
                "python3",
                "-m",
                "sglang.launch_server",
                "--tp",
                "8",
                "--name",
                "a b",
                "$HOME"
            ]
        );
        assert_eq!(split("a \\\n b").unwrap(), ["a", "b"]);
        assert!(split("a 'b").is_err());
    }

    #[test]
    fn join_then_split_round_trips() {
        let words = ["echo", "it's", "$(x)", "a\tb", ""];
        assert_eq!(split(&join(&words)).unwrap(), words);
    }
}
