//! The one error type of node facts: failures to read a probe's output, a section of
//! it, or saved facts. It does not cover running the probe (the transport's errors do)
//! nor facts that are merely absent (a node without GPUs is a fact, not an error).

use std::path::PathBuf;

/// A failure to turn probe output or saved facts into [`crate::facts::NodeFacts`].
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    /// The text does not start with the probe's header line `@@cuda-upgrade-probe 1@@`.
    #[error("Failed to find the probe header `@@cuda-upgrade-probe 1@@` in the probe output")]
    MissingHeader,
    /// The header names a format this build cannot read, e.g. `2`.
    #[error("Failed to read probe output of format `{found}`, this build reads format `1`")]
    UnsupportedFormat {
        /// The format found in the header, e.g. `2`.
        found: String,
    },
    /// A section began (`@@begin nvidia-smi-gpus@@`) and never ended.
    #[error("Failed to find the end of section `{name}`")]
    UnterminatedSection {
        /// The section's name, e.g. `nvidia-smi-gpus`.
        name: String,
    },
    /// A line outside any section, e.g. `garbage`.
    #[error("Failed to place line {line} of the probe output outside any section: `{text}`")]
    StrayLine {
        /// The 1-based line number, e.g. `12`.
        line: usize,
        /// The line, e.g. `garbage`.
        text: String,
    },
    /// An end marker whose status is neither a number nor `absent`, e.g. `status=x`.
    #[error("Failed to parse the status `{status}` of section `{name}`")]
    InvalidStatus {
        /// The section's name, e.g. `driver`.
        name: String,
        /// The status text, e.g. `x`.
        status: String,
    },
    /// One section's content did not parse; the cause says which line or value.
    #[error("Failed to parse section `{name}` of the probe output")]
    Section {
        /// The section's name, e.g. `ldconfig`.
        name: String,
        /// What did not parse.
        #[source]
        source: Box<FactsError>,
    },
    /// A line that does not have the shape its source always prints.
    #[error("Failed to parse line {line}: `{text}`")]
    InvalidLine {
        /// The 1-based line number inside the section, e.g. `3`.
        line: usize,
        /// The line, e.g. `0, NVIDIA H200`.
        text: String,
    },
    /// A line whose shape is right but one value is not.
    #[error("Failed to parse line {line}: `{text}`")]
    InvalidValue {
        /// The 1-based line number inside the section, e.g. `3`.
        line: usize,
        /// The line, e.g. `0, NVIDIA H200, 580.x, 9.0, 143771, 0, GPU-…`.
        text: String,
        /// The value that did not parse.
        #[source]
        source: Box<FactsError>,
    },
    /// Not a driver version such as `580.159.04`, or not a CUDA version such as `13.0.1`.
    #[error(transparent)]
    InvalidVersion(#[from] crate::cuda::CudaValueError),
    /// Not a compute capability such as `9.0`.
    #[error("Failed to parse `{value}` as a compute capability")]
    InvalidComputeCapability {
        /// The text, e.g. `sm90`.
        value: String,
    },
    /// Not a glibc version such as `glibc 2.39`.
    #[error("Failed to parse `{value}` as a glibc version")]
    InvalidGlibcVersion {
        /// The text, e.g. `musl`.
        value: String,
    },
    /// Not a number of the expected kind, e.g. a MiB count.
    #[error("Failed to parse `{value}` as a number")]
    InvalidNumber {
        /// The text, e.g. `lots`.
        value: String,
        /// Why it did not parse.
        #[source]
        source: std::num::ParseIntError,
    },
    /// Not a PEP 440 version, e.g. `2.11.0.x`.
    #[error("Failed to parse `{value}` as a package version")]
    InvalidPackageVersion {
        /// The text, e.g. `2.11.0.x`.
        value: String,
        /// Why it did not parse.
        #[source]
        source: pep440_rs::VersionParseError,
    },
    /// Not a package name, e.g. `-torch`.
    #[error("Failed to parse `{value}` as a package name")]
    InvalidPackageName {
        /// The text, e.g. `-torch`.
        value: String,
        /// Why it did not parse.
        #[source]
        source: pep508_rs::InvalidNameError,
    },
    /// The interpreter's JSON report did not parse.
    #[error("Failed to parse the report of interpreter `{python}`")]
    PythonReport {
        /// The interpreter, e.g. `/opt/ml-env/bin/python3`.
        python: String,
        /// Why it did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A toolkit's `version.json` did not parse.
    #[error("Failed to parse `{path}`")]
    ToolkitVersionJson {
        /// The file, e.g. `/usr/local/cuda-13.0/version.json`.
        path: PathBuf,
        /// Why it did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The rules that identify a toolkit by its nvcc build or its apt packages
    /// (`manifests/rules/cuda-updates.yaml`, embedded) did not load.
    #[error("Failed to load the toolkit identification rules")]
    ToolkitRules(#[source] crate::rules::RulesError),
    /// Saved facts (`--facts FILE`) could not be read.
    #[error("Failed to read node facts from `{path}`")]
    ReadFacts {
        /// The file, e.g. `h200.facts.json`.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// Saved facts are not the JSON that `upgrade probe --format json` prints.
    #[error("Failed to parse node facts JSON")]
    FactsJson(#[source] serde_json::Error),
    /// Saved facts carry a schema this build cannot read, e.g. `2`.
    #[error("Failed to read node facts of schema `{found}`, this build reads schema `1`")]
    UnsupportedSchema {
        /// The schema found, e.g. `2`.
        found: u32,
    },
    /// Facts could not be written as JSON.
    #[error("Failed to serialize node facts as JSON")]
    SerializeFacts(#[source] serde_json::Error),
}

impl FactsError {
    /// Wraps an error with the section it came from, e.g. `ldconfig`.
    pub(crate) fn in_section(self, name: &str) -> Self {
        Self::Section {
            name: name.to_string(),
            source: Box::new(self),
        }
    }

    /// Wraps a value error with the line (1-based) it was found on.
    pub(crate) fn on_line(self, line: usize, text: &str) -> Self {
        Self::InvalidValue {
            line,
            text: text.to_string(),
            source: Box::new(self),
        }
    }
}
