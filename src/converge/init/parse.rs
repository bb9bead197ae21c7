//! The survey's report as typed values: what the node's interpreter printed is parsed
//! here, where it enters, and nothing of it reaches the manifest `init` writes but
//! through these types. A package name is a PEP 508 [`PackageName`], a version a PEP 440
//! [`Version`], a URL one line that parses with a scheme the manifest takes for it and no
//! host that starts with `-`, and any other text holds no control character, line or
//! paragraph separator or bidirectional control (which a YAML reader would take as the
//! start of a new line, a key, a section). What does not parse is left out, with a
//! note that says what and why, escaped.

use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::PackageName;
use serde::Deserialize;

use super::{DirectUrl, PipIndexes, Survey, SurveyBlock, SurveyDistribution};
use crate::manifest::RedactedUrl;
use crate::text::{Line, text_value};

/// The survey as the interpreter printed it (see `survey.py`); every field is checked by
/// [`typed`] before it is used.
#[derive(Debug, Deserialize)]
pub(super) struct RawSurvey {
    #[serde(default)]
    distributions: Vec<RawDistribution>,
    #[serde(default)]
    pip: RawPip,
    managed_block: Option<RawBlock>,
}

#[derive(Debug, Deserialize)]
struct RawDistribution {
    name: Option<String>,
    version: Option<String>,
    #[serde(default)]
    requires: Vec<String>,
    direct_url: Option<serde_json::Value>,
    installer: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct RawPip {
    index_url: Option<String>,
    #[serde(default)]
    extra_index_urls: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct RawBlock {
    manifest: Option<String>,
    #[serde(default)]
    variables: Vec<(serde_json::Value, serde_json::Value)>,
    #[serde(default)]
    secrets: Vec<serde_json::Value>,
}

/// `text` when it is one non-empty [`Line`] (no control character, line break of any
/// reader or bidirectional control, which a YAML reader would take as the start of a
/// new line, a key, a section).
fn line(text: &str) -> Option<String> {
    Line::new(text)
        .ok()
        .filter(|line| !line.is_empty())
        .map(String::from)
}

/// Index URLs: the schemes the manifest's `indexes[].url` takes.
const INDEX_SCHEMES: &[&str] = &["http", "https", "file"];

/// Where a distribution came from (PEP 610): git and the schemes pip installs from.
const DIRECT_SCHEMES: &[&str] = &[
    "http",
    "https",
    "file",
    "git+https",
    "git+http",
    "git+ssh",
    "git+git",
    "git+file",
];

/// `text` as a URL with one of `schemes`, e.g. `https://mirror.example/simple`: one line,
/// parsed, no host that starts with `-` (as the manifest loader checks its URLs); the
/// reason it is not, e.g. `not a URL (relative URL without a base)`.
fn url(text: &str, schemes: &[&str]) -> Result<String, String> {
    if Line::new(text).is_err() {
        return Err("it holds a control character or a line separator".to_string());
    }
    let parsed = url::Url::parse(text).map_err(|error| format!("not a URL ({error})"))?;
    if !schemes.contains(&parsed.scheme()) {
        return Err(format!(
            "the scheme `{}` is not taken here",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_some_and(|host| host.starts_with('-')) {
        return Err("its host starts with `-`".to_string());
    }
    Ok(text.to_string())
}

/// Where a distribution came from (PEP 610 `direct_url.json`, or a saved facts file's
/// record of it) as a checked URL; the reason it is not one.
pub(super) fn direct_url_text(text: &str) -> Result<String, String> {
    url(text, DIRECT_SCHEMES)
}

/// A git commit id: 7 to 64 hexadecimal digits.
fn is_commit(text: &str) -> bool {
    (7..=64).contains(&text.len()) && text.chars().all(|c| c.is_ascii_hexdigit())
}

/// The typed survey of `raw`; what does not parse is left out and noted in
/// [`Survey::skipped`].
pub(super) fn typed(raw: RawSurvey) -> Survey {
    let mut skipped = Vec::new();
    let distributions = raw
        .distributions
        .into_iter()
        .filter_map(|dist| distribution(dist, &mut skipped))
        .collect();
    let pip = pip(raw.pip, &mut skipped);
    let managed_block = raw
        .managed_block
        .map(|block| managed_block(block, &mut skipped));
    Survey {
        distributions,
        pip,
        managed_block,
        skipped,
    }
}

fn distribution(raw: RawDistribution, skipped: &mut Vec<String>) -> Option<SurveyDistribution> {
    let raw_name = raw.name.unwrap_or_default();
    let Some(name) = line(&raw_name).and_then(|name| PackageName::new(name).ok()) else {
        skipped.push(format!(
            "a distribution whose name `{}` is not a package name",
            text_value(&raw_name)
        ));
        return None;
    };
    let raw_version = raw.version.unwrap_or_default();
    let Some(version) = line(&raw_version).and_then(|version| Version::from_str(&version).ok())
    else {
        skipped.push(format!(
            "`{name}`, whose version `{}` is not a PEP 440 version",
            text_value(&raw_version)
        ));
        return None;
    };
    let mut requires = Vec::new();
    for requirement in raw.requires {
        match line(&requirement).and_then(|text| PackageName::new(text).ok()) {
            Some(required) => requires.push(required),
            None => skipped.push(format!(
                "a requirement of `{name}` {version}, `{}`, which is not a package name",
                text_value(&requirement)
            )),
        }
    }
    let direct_url = raw
        .direct_url
        .map(|value| direct_url(&value, &name, &version, skipped));
    let installer = raw.installer.and_then(|installer| {
        let checked = line(&installer);
        if checked.is_none() {
            skipped.push(format!(
                "the installer of `{name}` {version}, `{}`",
                text_value(&installer)
            ));
        }
        checked
    });
    Some(SurveyDistribution {
        name,
        version,
        requires,
        direct_url,
        installer,
    })
}

/// A PEP 610 `direct_url.json`: its `url` and `vcs_info.commit_id`, each checked; a
/// distribution that has one is still one installed from a URL when they do not parse.
fn direct_url(
    value: &serde_json::Value,
    name: &PackageName,
    version: &Version,
    skipped: &mut Vec<String>,
) -> DirectUrl {
    let url = value
        .get("url")
        .and_then(serde_json::Value::as_str)
        .and_then(|text| {
            direct_url_text(text)
                .map_err(|reason| {
                    skipped.push(format!(
                        "the URL `{}` that `{name}` {version} was installed from: {reason}",
                        RedactedUrl::new(text)
                    ));
                })
                .ok()
        });
    let commit = value
        .get("vcs_info")
        .and_then(|vcs| vcs.get("commit_id"))
        .and_then(serde_json::Value::as_str)
        .and_then(|commit| {
            if is_commit(commit) {
                Some(commit.to_string())
            } else {
                skipped.push(format!(
                    "the commit of `{name}` {version}, `{}`, which is not a commit id",
                    text_value(commit)
                ));
                None
            }
        });
    DirectUrl { url, commit }
}

fn pip(raw: RawPip, skipped: &mut Vec<String>) -> PipIndexes {
    let mut checked = |text: String, what: &str| match url(&text, INDEX_SCHEMES) {
        Ok(url) => Some(url),
        Err(reason) => {
            skipped.push(format!(
                "pip's `{what}` `{}`: {reason}",
                RedactedUrl::new(&text)
            ));
            None
        }
    };
    PipIndexes {
        index_url: raw.index_url.and_then(|text| checked(text, "index-url")),
        extra_index_urls: raw
            .extra_index_urls
            .into_iter()
            .filter_map(|text| checked(text, "extra-index-url"))
            .collect(),
    }
}

fn managed_block(raw: RawBlock, skipped: &mut Vec<String>) -> SurveyBlock {
    let manifest = raw.manifest.and_then(|name| {
        let checked = line(&name);
        if checked.is_none() {
            skipped.push(format!(
                "the env block's manifest name `{}`",
                text_value(&name)
            ));
        }
        checked
    });
    let shown = |value: &serde_json::Value| {
        value
            .as_str()
            .map_or_else(|| text_value(&value.to_string()), text_value)
    };
    let variable_name = |value: &serde_json::Value| {
        value
            .as_str()
            .filter(|name| crate::manifest::is_variable_name(name))
            .map(str::to_string)
    };
    let mut variables = Vec::new();
    for (name, value) in &raw.variables {
        let value = value
            .as_str()
            .filter(|text| Line::new(*text).is_ok())
            .map(str::to_string);
        match (variable_name(name), value) {
            (Some(name), Some(value)) => variables.push((name, value)),
            _ => skipped.push(format!(
                "the env block's variable `{}`, whose name is no variable name or whose value is not one line of text",
                shown(name)
            )),
        }
    }
    let mut secrets = Vec::new();
    for name in &raw.secrets {
        match variable_name(name) {
            Some(name) => secrets.push(name),
            None => skipped.push(format!(
                "the env block's secret `{}`, which is no variable name",
                shown(name)
            )),
        }
    }
    SurveyBlock {
        manifest,
        variables,
        secrets,
    }
}
