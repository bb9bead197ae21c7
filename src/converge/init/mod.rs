//! `upgrade init`: a first manifest from a node as it is.
//!
//! The node's [`NodeFacts`] (driver, GPUs, toolkits, interpreter, packages) plus one more
//! round trip, the [`Survey`]: what only the target interpreter can tell (each installed
//! distribution's requirements, to find the top-level ones; its PEP 610
//! `direct_url.json`; pip's configured indexes; the env step's managed block). The
//! manifest text is rendered by [`render`], a pure function of both, with `decide:`
//! comments where a person must choose. This module does not write files (the verb
//! does) and holds no resolution logic: the manifest pins what is installed, so a plan
//! of it on the same node changes nothing.

mod error;
mod parse;
mod render;

use std::collections::BTreeMap;
use std::path::Path;

use pep440_rs::Version;
use pep508_rs::PackageName;

pub use error::InitError;
pub use render::{InitSource, render};

use crate::facts::NodeFacts;
use crate::transport::{NodeCommand, Transport};

/// The script the target interpreter runs for the survey.
const SURVEY_SCRIPT: &str = include_str!("survey.py");

/// What the target interpreter reports beyond the facts, e.g. `sglang` `0.5.9`
/// requiring `torch`, pip configured with `https://mirror.example/simple`: every field
/// parsed where it enters ([`Survey::parse`]), what does not parse left out and noted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Survey {
    /// Every installed distribution, sorted by normalized name.
    pub distributions: Vec<SurveyDistribution>,
    /// pip's configured indexes.
    pub pip: PipIndexes,
    /// The env step's managed block, when the interpreter's `sitecustomize.py` has one.
    pub managed_block: Option<SurveyBlock>,
    /// What the survey reported that does not parse and is left out, escaped, e.g.
    /// ``` `pip`, whose version `24.0\u{2028}verify:` is not a PEP 440 version ```.
    pub skipped: Vec<String>,
}

/// One installed distribution, e.g. `sglang` `0.5.9`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurveyDistribution {
    /// e.g. `flashinfer-python`.
    pub name: PackageName,
    /// The version with its local label, e.g. `2.9.1+cu130`.
    pub version: Version,
    /// The names it requires unconditionally on this node, e.g. `["torch"]`.
    pub requires: Vec<PackageName>,
    /// Its PEP 610 `direct_url.json`, when it was installed from a URL or a directory.
    pub direct_url: Option<DirectUrl>,
    /// The tool that installed it (`INSTALLER`), e.g. `pip` or `uv`; one line.
    pub installer: Option<String>,
}

/// What a PEP 610 `direct_url.json` says, checked: where the distribution came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectUrl {
    /// The URL, e.g. `git+https://github.com/sgl-project/sglang`; `None` when it did not
    /// parse (noted in [`Survey::skipped`]). May carry credentials: shown redacted.
    pub url: Option<String>,
    /// `vcs_info.commit_id`: hexadecimal digits.
    pub commit: Option<String>,
}

/// pip's configured indexes on the node (`pip config list`), e.g.
/// `index-url = https://mirror.example/simple`: URLs that parse, on one line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipIndexes {
    /// `index-url`, when configured.
    pub index_url: Option<String>,
    /// `extra-index-url` entries.
    pub extra_index_urls: Vec<String>,
}

/// The managed block's content as the survey read it: the manifest that wrote it, e.g.
/// `sglang-0.5.9-cuda13`, and its literal variables, each one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurveyBlock {
    /// The name of the manifest the block was written for.
    pub manifest: Option<String>,
    /// `[name, value]` pairs of the variables written as literals: variable names and
    /// one-line values.
    pub variables: Vec<(String, String)>,
    /// The names of the secret variables (their values live in a root-only file).
    pub secrets: Vec<String>,
}

impl Survey {
    /// The survey from what the interpreter printed (`survey.py`'s JSON): every field
    /// parsed into its type; what does not parse is left out and noted in
    /// [`Survey::skipped`].
    pub fn parse(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(json).map(parse::typed)
    }

    /// The distributions no other installed distribution requires, e.g. `sglang` (which
    /// brings `torch`), sorted by name.
    pub fn top_level(&self) -> Vec<&SurveyDistribution> {
        let required: std::collections::BTreeSet<&PackageName> = self
            .distributions
            .iter()
            .flat_map(|dist| dist.requires.iter())
            .collect();
        self.distributions
            .iter()
            .filter(|dist| !required.contains(&dist.name))
            .collect()
    }

    /// Distributions by normalized name.
    pub fn by_name(&self) -> BTreeMap<&PackageName, &SurveyDistribution> {
        self.distributions
            .iter()
            .map(|dist| (&dist.name, dist))
            .collect()
    }
}

/// Ask the target interpreter `python` on the node for the [`Survey`]; `sitecustomize`
/// is the file that may hold the managed block with marker `marker`. The interpreter
/// runs isolated and without `site` (`-I -S`): no `.pth` file or `sitecustomize` of the
/// node's environment runs; the survey puts the site directories on its path itself.
pub async fn survey(
    transport: &Transport,
    python: &Path,
    sitecustomize: Option<&Path>,
    marker: &str,
) -> Result<Survey, InitError> {
    let command = NodeCommand::new(python.display().to_string())
        .args(["-I", "-S", "-c"])
        .script("init-survey", SURVEY_SCRIPT)
        .arg(
            sitecustomize
                .map(|path| path.display().to_string())
                .unwrap_or_default(),
        )
        .arg(marker);
    let failed = |message: String| InitError::Survey {
        node: transport.name().to_string(),
        python: python.display().to_string(),
        message,
    };
    let output = transport
        .run(&command, None)
        .await
        .map_err(|error| failed(error.to_string()))?;
    if !output.success() {
        return Err(failed(output.tail(5)));
    }
    Survey::parse(&output.stdout).map_err(|error| failed(error.to_string()))
}

/// The first manifest's text for a node, checked by the manifest loader: a text that
/// does not load is an error, never written.
pub fn manifest_text(
    source: &InitSource,
    facts: &NodeFacts,
    survey: Option<&Survey>,
) -> Result<String, InitError> {
    let text = render(source, facts, survey);
    crate::manifest::load_str(&text, "init", None).map_err(|source_error| InitError::Invalid {
        node: source.to_string(),
        source: source_error,
    })?;
    Ok(text)
}

/// The survey of a node whose interpreter answered the probe; `None` without one.
pub async fn gather(transport: &Transport, facts: &NodeFacts) -> Result<Option<Survey>, InitError> {
    let Some(python) = &facts.python else {
        return Ok(None);
    };
    let sitecustomize = facts
        .sitecustomize
        .as_ref()
        .and_then(|site| site.real_path.as_deref().or(site.origin.as_deref()));
    survey(
        transport,
        &python.executable,
        sitecustomize,
        &facts.probe.marker,
    )
    .await
    .map(Some)
}

#[cfg(test)]
mod tests;
