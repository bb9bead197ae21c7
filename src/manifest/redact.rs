//! Credentials in URLs, found and masked before a URL reaches any output.
//!
//! A manifest may carry an index or git URL with credentials, e.g.
//! `https://user:token@host/simple` or `https://host/simple?token=abc`. Every place that
//! shows such a URL (plans, saved plans, diffs, locks, error messages) shows
//! [`redact_url`]'s form instead, e.g. `https://user:***@host/simple` and
//! `https://host/simple?token=***`; the executor gets the real URL only through a
//! root-only file on the node (see `steps::pip` and `steps::source`). This module does
//! string surgery only, so a URL without credentials comes back byte for byte.

/// What stands in for a credential.
pub const MASK: &str = "***";

/// The parts of a URL that can hold a credential.
struct Parts<'a> {
    /// e.g. `https://`.
    scheme_end: usize,
    /// The user information before the last `@` of the authority, e.g. `user:token`.
    userinfo: Option<&'a str>,
    /// The query after `?`, without the fragment, e.g. `token=abc&x=1`.
    query: Option<(usize, &'a str)>,
}

fn parts(text: &str) -> Option<Parts<'_>> {
    let scheme_end = text.find("://")? + 3;
    let rest = &text[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let userinfo = authority.rfind('@').map(|at| &authority[..at]);
    // The query starts at the first `?` after the scheme; a `?` inside the fragment
    // starts none.
    let query = rest.find('?').and_then(|offset| {
        let start = scheme_end + offset;
        let fragment = rest.find('#').map_or(text.len(), |at| scheme_end + at);
        (start < fragment).then(|| (start + 1, &text[start + 1..fragment]))
    });
    Some(Parts {
        scheme_end,
        userinfo,
        query,
    })
}

/// `true` when the user information of the URL is a credential: a password, or a
/// user name alone over http(s) (tokens are often sent as the user name). An ssh user
/// such as `git` in `ssh://git@host/repo` is not one.
fn userinfo_is_credential(scheme: &str, userinfo: &str) -> bool {
    if userinfo.is_empty() {
        return false;
    }
    userinfo.contains(':') || matches!(scheme, "http" | "https")
}

/// `true` when `text` carries a credential: a password or http(s) user name in its
/// user information, or a query value (`?token=…`), e.g. for `https://u:t@host/x`.
pub fn has_credentials(text: &str) -> bool {
    let Some(parts) = parts(text) else {
        return false;
    };
    let scheme = text[..parts.scheme_end - 3].to_ascii_lowercase();
    parts
        .userinfo
        .is_some_and(|userinfo| userinfo_is_credential(&scheme, userinfo))
        || parts
            .query
            .is_some_and(|(_, query)| query.split('&').any(|pair| pair.contains('=')))
}

/// The URL with its credentials masked, e.g. `https://user:token@host/simple?token=abc`
/// → `https://user:***@host/simple?token=***`. Text that is not a URL, or a URL without
/// credentials, comes back unchanged.
pub fn redact_url(text: &str) -> String {
    mask_url(text, &Masking::Stars)
}

/// How [`mask_url`] renders a credential it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Masking<'a> {
    /// [`MASK`] in its place, e.g. `https://user:***@host/simple`.
    Stars,
    /// A `${VARIABLE}` reference pip expands in a requirements file, named from this
    /// prefix, e.g. with `UPGRADE_INDEX_PRIVATE`: `https://user:${UPGRADE_INDEX_PRIVATE_PASSWORD}@host/simple`,
    /// `https://${UPGRADE_INDEX_PRIVATE_TOKEN}@host/simple`, `?token=${UPGRADE_INDEX_PRIVATE_TOKEN}`.
    Placeholders(&'a str),
    /// Left out, e.g. `https://host/simple` (the installer brings its own credentials).
    Strip,
}

/// The variable [`Masking::Placeholders`] names for one credential, e.g.
/// `UPGRADE_INDEX_PRIVATE_PASSWORD`: upper case, every other character `_`.
pub fn placeholder_name(prefix: &str, part: &str) -> String {
    format!("{prefix}_{part}")
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() {
                ch.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The URL with its credentials rendered as `masking` says; the one credential masker
/// behind [`redact_url`]. Text that is not a URL, or a URL without credentials, comes
/// back unchanged.
pub fn mask_url(text: &str, masking: &Masking<'_>) -> String {
    let Some(parts) = parts(text) else {
        return text.to_string();
    };
    let secret = |part: &str| match masking {
        Masking::Stars => MASK.to_string(),
        Masking::Placeholders(prefix) => format!("${{{}}}", placeholder_name(prefix, part)),
        Masking::Strip => String::new(),
    };
    let scheme = text[..parts.scheme_end - 3].to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..parts.scheme_end]);
    let mut position = parts.scheme_end;
    if let Some(userinfo) = parts.userinfo
        && userinfo_is_credential(&scheme, userinfo)
    {
        if *masking == Masking::Strip {
            // The user information and its `@`.
            position += 1;
        } else {
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(&secret("password"));
                }
                None => out.push_str(&secret("token")),
            }
        }
        position += userinfo.len();
    }
    match parts.query {
        Some((start, query)) => {
            let kept: Vec<String> = query
                .split('&')
                .filter_map(|pair| match pair.split_once('=') {
                    Some(_) if *masking == Masking::Strip => None,
                    Some((key, value)) if !value.is_empty() => {
                        Some(format!("{key}={}", secret(key)))
                    }
                    _ => Some(pair.to_string()),
                })
                .collect();
            let before = &text[position..start];
            if kept.is_empty() {
                out.push_str(before.strip_suffix('?').unwrap_or(before));
            } else {
                out.push_str(before);
                out.push_str(&kept.join("&"));
            }
            out.push_str(&text[start + query.len()..]);
        }
        None => out.push_str(&text[position..]),
    }
    out
}

/// A URL as any output may show it: its credentials masked by [`redact_url`] and every
/// character that could break or hide a line escaped, e.g.
/// `https://user:***@mirror.example/simple/`. Errors, reports and logs hold this type,
/// never the URL itself, so no path a failure takes (terminal, JSON, node logs, a Slurm
/// drain reason, a Kubernetes annotation) can show a credential.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(into = "String")]
pub struct RedactedUrl(String);

impl RedactedUrl {
    /// Mask `url`, e.g. `https://u:t@host/x?token=y` → `https://u:***@host/x?token=***`.
    pub fn new(url: &str) -> Self {
        Self(crate::text::text_value(&redact_url(url)))
    }

    /// The masked URL, e.g. `https://u:***@host/x`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&url::Url> for RedactedUrl {
    fn from(url: &url::Url) -> Self {
        Self::new(url.as_str())
    }
}

impl From<RedactedUrl> for String {
    fn from(url: RedactedUrl) -> Self {
        url.0
    }
}

impl std::ops::Deref for RedactedUrl {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for RedactedUrl {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl std::fmt::Display for RedactedUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Mask every URL with credentials inside free text, e.g. an error message that quotes
/// one: each word that is such a URL is redacted, words ending at whitespace and at the
/// quotes and brackets programs put around a URL (`` ` ``, `'`, `"`, `(`, `)`, `<`, `>`;
/// git writes `unable to access 'https://token@host/repo/'`).
pub fn redact_text(text: &str) -> String {
    if !text.contains("://") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut word_start = 0;
    for (index, ch) in text.char_indices() {
        if ch.is_whitespace() || matches!(ch, '`' | '\'' | '"' | '(' | ')' | '<' | '>') {
            out.push_str(&redact_url(&text[word_start..index]));
            out.push(ch);
            word_start = index + ch.len_utf8();
        }
    }
    out.push_str(&redact_url(&text[word_start..]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_is_masked() {
        assert_eq!(
            redact_url("https://user:tok3n@host.example/simple"),
            "https://user:***@host.example/simple"
        );
        assert_eq!(
            redact_url("https://ghp_abc@host.example/org/repo"),
            "https://***@host.example/org/repo"
        );
        assert_eq!(
            redact_url("ssh://git@host.example/org/repo"),
            "ssh://git@host.example/org/repo"
        );
        assert!(has_credentials("https://user:tok3n@host.example/simple"));
        assert!(!has_credentials("ssh://git@host.example/org/repo"));
    }

    #[test]
    fn credentials_become_placeholders_or_nothing() {
        let url = "https://user:tok3n@host.example/simple?token=abc&page=2";
        assert_eq!(
            mask_url(url, &Masking::Placeholders("UPGRADE_INDEX_my-private")),
            "https://user:${UPGRADE_INDEX_MY_PRIVATE_PASSWORD}@host.example/simple?token=${UPGRADE_INDEX_MY_PRIVATE_TOKEN}&page=${UPGRADE_INDEX_MY_PRIVATE_PAGE}"
        );
        assert_eq!(
            mask_url(
                "https://ghp_abc@host.example/simple",
                &Masking::Placeholders("P")
            ),
            "https://${P_TOKEN}@host.example/simple"
        );
        assert_eq!(
            mask_url(url, &Masking::Strip),
            "https://host.example/simple"
        );
        assert_eq!(
            mask_url("https://host.example/simple?flag", &Masking::Strip),
            "https://host.example/simple?flag"
        );
        assert_eq!(
            mask_url("https://host.example/simple", &Masking::Strip),
            "https://host.example/simple"
        );
    }

    /// Found by the fuzz harness: a `?` before `://` is no query.
    #[test]
    fn a_question_mark_before_the_scheme_is_no_query() {
        assert_eq!(
            redact_url("http? s://github.com/sgl-project/sglang"),
            "http? s://github.com/sgl-project/sglang"
        );
    }

    #[test]
    fn query_values_are_masked() {
        assert_eq!(
            redact_url("https://host.example/simple?token=abc&x=#frag?y=1"),
            "https://host.example/simple?token=***&x=#frag?y=1"
        );
        assert!(has_credentials("https://host.example/simple?token=abc"));
    }

    #[test]
    fn plain_urls_and_text_are_unchanged() {
        for text in [
            "https://download.pytorch.org/whl/cu130",
            "git@github.com:org/repo",
            "/srv/git/repo",
            "not a url",
        ] {
            assert_eq!(redact_url(text), text);
            assert!(!has_credentials(text));
        }
        assert_eq!(
            redact_text("invalid `https://u:p@h/x` here"),
            "invalid `https://u:***@h/x` here"
        );
    }

    /// See: issue 33. Failure text quotes URLs the way programs do (git in single
    /// quotes, reqwest in parentheses); a token as the user name is masked there too,
    /// and a [`RedactedUrl`] holds no credential and no line break.
    #[test]
    fn urls_quoted_by_programs_are_masked() {
        assert_eq!(
            redact_text("fatal: unable to access 'https://ghp_tok3n@host.example/org/repo/': 403"),
            "fatal: unable to access 'https://***@host.example/org/repo/': 403"
        );
        assert_eq!(
            redact_text("error sending request for url (https://u:pw@host.example/simple/x/)"),
            "error sending request for url (https://u:***@host.example/simple/x/)"
        );
        assert_eq!(
            redact_text("<https://host.example/x?token=abc>"),
            "<https://host.example/x?token=***>"
        );
        let url = RedactedUrl::new("https://u:pw@host.example/\u{2028}x?token=abc");
        assert_eq!(
            url.as_str(),
            "https://u:***@host.example/\\u{2028}x?token=***"
        );
    }
}
