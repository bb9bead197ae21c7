//! The probe script and the arguments it runs with. It owns what is sent to a node to
//! gather its facts in one round trip; it does not run anything (the transports do) and
//! does not read the output (see [`crate::facts::NodeFacts::parse`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The probe script, POSIX `sh`. Send it on standard input of `sh -s -- ARGUMENTS…`
/// (see [`ProbeRequest::command`]); it always exits `0` and prints sections.
pub const PROBE_SCRIPT: &str = include_str!("probe.sh");

/// The name of the block the env injection step manages in `sitecustomize.py`: the
/// block runs from `# >>> cuda-upgrade managed block >>>` to
/// `# <<< cuda-upgrade managed block <<<`.
pub const DEFAULT_MARKER: &str = "cuda-upgrade managed block";

/// How much the probe gathers, e.g. `plan` for an apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeScope {
    /// Everything `upgrade probe` shows, the processes holding each GPU and the wheel
    /// tags of the interpreter's own `packaging` included.
    #[default]
    Full,
    /// What a plan reads: no GPU processes (a verification launch checks its GPUs right
    /// before it starts) and the interpreter's wheel tags from the probe's own
    /// computation (the resolver computes its own).
    Plan,
    /// What an apply reads again before each change: a plan's facts without the GPUs
    /// (`nvidia-smi` is not started: no step changes them, and the run keeps those of
    /// its first probe).
    Step,
}

impl ProbeScope {
    /// Whether this is [`ProbeScope::Full`], the default left out of the facts' JSON.
    pub fn is_full(&self) -> bool {
        *self == Self::Full
    }

    /// The script's word for it, e.g. `plan`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Plan => "plan",
            Self::Step => "step",
        }
    }
}

/// What to probe, e.g. interpreter `/opt/ml-env/bin/python3` expecting `libnvrtc.so.13`.
/// The probe echoes it back, so parsed facts carry it too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRequest {
    /// The target interpreter, e.g. `/opt/ml-env/bin/python3`; `None` to skip Python.
    pub python: Option<PathBuf>,
    /// Sonames the manifest expects the loader to resolve, e.g. `["libnvrtc.so.13"]`.
    pub libraries: Vec<String>,
    /// Paths whose real location matters, e.g. the manifest's library directory
    /// `/usr/local/cuda-13.0/targets/x86_64-linux/lib`.
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// Where the env step keeps secret values, when not the default
    /// `/etc/cuda-upgrade/secrets` (tests on this machine use a temporary directory).
    #[serde(default)]
    pub secrets_dir: Option<PathBuf>,
    /// The managed block's marker name, e.g. `cuda-upgrade managed block`.
    pub marker: String,
    /// A file to read the driver version from instead of `/proc/driver/nvidia/version`,
    /// e.g. a testbed's `/opt/testbed/driver-version`.
    pub driver_version_file: Option<PathBuf>,
    /// How much to gather; [`ProbeScope::Full`] when the JSON has no `scope`.
    #[serde(default, skip_serializing_if = "ProbeScope::is_full")]
    pub scope: ProbeScope,
}

impl ProbeRequest {
    /// A request for `python` expecting `libraries`, with the default marker.
    pub fn new(python: impl Into<PathBuf>, libraries: Vec<String>) -> Self {
        Self {
            python: Some(python.into()),
            libraries,
            paths: Vec::new(),
            secrets_dir: None,
            marker: DEFAULT_MARKER.to_string(),
            driver_version_file: None,
            scope: ProbeScope::Full,
        }
    }

    /// The script's arguments, e.g. `["--python", "/opt/ml-env/bin/python3", "--library",
    /// "libnvrtc.so.13", "--marker", "cuda-upgrade managed block"]`. Each element is one
    /// argument: quote each one when rendering a remote command line.
    pub fn arguments(&self) -> Vec<String> {
        let mut arguments = Vec::new();
        if let Some(python) = &self.python {
            arguments.push("--python".to_string());
            arguments.push(python.to_string_lossy().into_owned());
        }
        for library in &self.libraries {
            arguments.push("--library".to_string());
            arguments.push(library.clone());
        }
        for path in &self.paths {
            arguments.push("--path".to_string());
            arguments.push(path.to_string_lossy().into_owned());
        }
        if let Some(directory) = &self.secrets_dir {
            arguments.push("--secrets-dir".to_string());
            arguments.push(directory.to_string_lossy().into_owned());
        }
        arguments.push("--marker".to_string());
        arguments.push(self.marker.clone());
        if let Some(file) = &self.driver_version_file {
            arguments.push("--driver-version-file".to_string());
            arguments.push(file.to_string_lossy().into_owned());
        }
        if !self.scope.is_full() {
            arguments.push("--scope".to_string());
            arguments.push(self.scope.as_str().to_string());
        }
        arguments
    }

    /// The whole command: program `sh` and its arguments, e.g. `["sh", "-s", "--",
    /// "--python", …]`; [`PROBE_SCRIPT`] goes on its standard input.
    pub fn command(&self) -> (&'static str, Vec<String>) {
        let mut arguments = vec!["-s".to_string(), "--".to_string()];
        arguments.extend(self.arguments());
        ("sh", arguments)
    }
}

impl Default for ProbeRequest {
    fn default() -> Self {
        Self {
            python: None,
            libraries: Vec::new(),
            paths: Vec::new(),
            secrets_dir: None,
            marker: DEFAULT_MARKER.to_string(),
            driver_version_file: None,
            scope: ProbeScope::Full,
        }
    }
}

/// Reads section `arguments` (`KEY\tVALUE` lines) back into a request.
pub(crate) fn parse_arguments(text: &str) -> ProbeRequest {
    let mut request = ProbeRequest::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('\t') else {
            continue;
        };
        match key {
            "python" if !value.is_empty() => request.python = Some(PathBuf::from(value)),
            "library" if !value.is_empty() => request.libraries.push(value.to_string()),
            "path" if !value.is_empty() => request.paths.push(PathBuf::from(value)),
            "secrets-dir" if !value.is_empty() => {
                request.secrets_dir = Some(PathBuf::from(value));
            }
            "marker" => request.marker = value.to_string(),
            "driver-version-file" if !value.is_empty() => {
                request.driver_version_file = Some(PathBuf::from(value));
            }
            "scope" if value == "plan" => request.scope = ProbeScope::Plan,
            "scope" if value == "step" => request.scope = ProbeScope::Step,
            _ => {}
        }
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_one_element_each() {
        let mut request = ProbeRequest::new(
            "/opt/ml env/bin/python3",
            vec!["libnvrtc.so.13".to_string()],
        );
        request.driver_version_file = Some(PathBuf::from("/opt/testbed/driver-version"));
        let (program, arguments) = request.command();
        assert_eq!(program, "sh");
        assert_eq!(
            arguments,
            vec![
                "-s",
                "--",
                "--python",
                "/opt/ml env/bin/python3",
                "--library",
                "libnvrtc.so.13",
                "--marker",
                "cuda-upgrade managed block",
                "--driver-version-file",
                "/opt/testbed/driver-version",
            ]
        );
    }

    #[test]
    fn a_plan_scope_is_one_more_argument_and_reads_back() {
        let mut request = ProbeRequest::new("/opt/ml-env/bin/python3", Vec::new());
        request.scope = ProbeScope::Plan;
        let arguments = request.arguments();
        assert_eq!(arguments[arguments.len() - 2..], ["--scope", "plan"]);
        let read = parse_arguments(
            "python\t/opt/ml-env/bin/python3\nmarker\tcuda-upgrade managed block\nscope\tplan\n",
        );
        assert_eq!(read, request);
        // The default scope stays out of the facts' JSON, so older facts read the same.
        let json = serde_json::to_value(ProbeRequest::default()).unwrap();
        assert!(json.get("scope").is_none());
    }

    #[test]
    fn arguments_section_reads_back() {
        let request = parse_arguments(
            "python\t/opt/ml-env/bin/python3\nmarker\tcuda-upgrade managed block\n\
             library\tlibnvrtc.so.13\ndriver-version-file\t\n",
        );
        assert_eq!(
            request,
            ProbeRequest::new(
                "/opt/ml-env/bin/python3",
                vec!["libnvrtc.so.13".to_string()]
            )
        );
    }
}
