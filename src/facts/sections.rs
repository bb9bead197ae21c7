//! Splits the probe script's output into its sections. It owns the wire format between
//! `probe.sh` and the parsers (`@@begin NAME[ ARGUMENT]@@` … `@@stderr@@` … `@@end
//! status=N@@`); what a section's text means is each parser's business.

use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;

/// The first line of every probe output, naming its format.
const HEADER_PREFIX: &str = "@@cuda-upgrade-probe ";

/// The format this build reads.
const FORMAT: &str = "1";

/// How the command behind a section ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "code")]
pub enum SectionStatus {
    /// The command ran and exited with this status, e.g. `0`.
    Exited(i32),
    /// The tool or file is not on the node, e.g. no `nvidia-smi`.
    Absent,
}

/// One section of the probe output, e.g. `nvidia-smi-gpus` or `toolkit-nvcc
/// /usr/local/cuda-13.0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The section's name, e.g. `toolkit-nvcc`.
    pub name: String,
    /// What the section is about, when there are several, e.g. `/usr/local/cuda-13.0`.
    pub argument: Option<String>,
    /// The command's standard output (bounded by the script).
    pub stdout: String,
    /// The command's standard error (bounded by the script).
    pub stderr: String,
    /// How the command ended.
    pub status: SectionStatus,
}

impl Section {
    /// Whether the command ran and exited `0`.
    pub fn succeeded(&self) -> bool {
        self.status == SectionStatus::Exited(0)
    }
}

/// The probe output split into sections, in the order the script printed them.
#[derive(Debug, Clone, Default)]
pub struct Sections {
    sections: Vec<Section>,
}

impl Sections {
    /// Splits probe output; fails when the header is missing or a section is cut off.
    pub fn parse(text: &str) -> Result<Self, FactsError> {
        let mut lines = text.lines().enumerate();
        let header = lines
            .by_ref()
            .map(|(_, line)| line.trim_end())
            .find(|line| !line.is_empty())
            .ok_or(FactsError::MissingHeader)?;
        let format = header
            .strip_prefix(HEADER_PREFIX)
            .and_then(|rest| rest.strip_suffix("@@"))
            .ok_or(FactsError::MissingHeader)?;
        if format != FORMAT {
            return Err(FactsError::UnsupportedFormat {
                found: format.to_string(),
            });
        }

        let mut sections = Vec::new();
        let mut open: Option<(Section, bool)> = None;
        for (index, line) in lines {
            let Some((section, in_stderr)) = open.as_mut() else {
                if line.trim().is_empty() {
                    continue;
                }
                let heading = line
                    .strip_prefix("@@begin ")
                    .and_then(|rest| rest.strip_suffix("@@"))
                    .ok_or_else(|| FactsError::StrayLine {
                        line: index + 1,
                        text: line.to_string(),
                    })?;
                let (name, argument) = match heading.split_once(' ') {
                    Some((name, argument)) => (name, Some(argument.to_string())),
                    None => (heading, None),
                };
                open = Some((
                    Section {
                        name: name.to_string(),
                        argument,
                        stdout: String::new(),
                        stderr: String::new(),
                        status: SectionStatus::Absent,
                    },
                    false,
                ));
                continue;
            };
            if line == "@@stderr@@" {
                *in_stderr = true;
                continue;
            }
            if let Some(status) = line
                .strip_prefix("@@end status=")
                .and_then(|rest| rest.strip_suffix("@@"))
            {
                section.status = match status {
                    "absent" => SectionStatus::Absent,
                    number => SectionStatus::Exited(number.parse().map_err(|_| {
                        FactsError::InvalidStatus {
                            name: section.name.clone(),
                            status: number.to_string(),
                        }
                    })?),
                };
                if let Some((section, _)) = open.take() {
                    sections.push(section);
                }
                continue;
            }
            let target = if *in_stderr {
                &mut section.stderr
            } else {
                &mut section.stdout
            };
            target.push_str(line);
            target.push('\n');
        }
        if let Some((section, _)) = open {
            return Err(FactsError::UnterminatedSection { name: section.name });
        }
        Ok(Self { sections })
    }

    /// The first section of this name, e.g. `driver`.
    pub fn get(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|section| section.name == name)
    }

    /// The section of this name about `argument`, e.g. `toolkit-nvcc` of
    /// `/usr/local/cuda-13.0`.
    pub fn get_for(&self, name: &str, argument: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|section| section.name == name && section.argument.as_deref() == Some(argument))
    }

    /// The section of this name when its command exited `0`.
    pub fn succeeded(&self, name: &str) -> Option<&Section> {
        self.get(name).filter(|section| section.succeeded())
    }

    /// Every section, in output order.
    pub fn iter(&self) -> impl Iterator<Item = &Section> {
        self.sections.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_carry_stdout_stderr_and_status() {
        let text = "@@cuda-upgrade-probe 1@@\n\
            @@begin driver /proc/driver/nvidia/version@@\n\
            NVRM version: x\n\
            @@end status=0@@\n\
            @@begin nvidia-smi-gpus@@\n\
            @@end status=absent@@\n\
            @@begin pip-freeze /opt/ml-env/bin/python3@@\n\
            @@stderr@@\n\
            No module named pip\n\
            @@end status=1@@\n";
        let sections = Sections::parse(text).unwrap();
        let driver = sections.get("driver").unwrap();
        assert_eq!(
            driver.argument.as_deref(),
            Some("/proc/driver/nvidia/version")
        );
        assert_eq!(driver.stdout, "NVRM version: x\n");
        assert!(driver.succeeded());
        assert_eq!(
            sections.get("nvidia-smi-gpus").unwrap().status,
            SectionStatus::Absent
        );
        let pip = sections
            .get_for("pip-freeze", "/opt/ml-env/bin/python3")
            .unwrap();
        assert_eq!(pip.status, SectionStatus::Exited(1));
        assert_eq!(pip.stderr, "No module named pip\n");
        assert!(sections.succeeded("pip-freeze").is_none());
    }

    #[test]
    fn broken_output_is_an_error() {
        assert!(matches!(
            Sections::parse("hello\n"),
            Err(FactsError::MissingHeader)
        ));
        assert!(matches!(
            Sections::parse("@@cuda-upgrade-probe 2@@\n"),
            Err(FactsError::UnsupportedFormat { .. })
        ));
        assert!(matches!(
            Sections::parse("@@cuda-upgrade-probe 1@@\n@@begin driver@@\nx\n"),
            Err(FactsError::UnterminatedSection { .. })
        ));
        assert!(matches!(
            Sections::parse("@@cuda-upgrade-probe 1@@\nstray\n"),
            Err(FactsError::StrayLine { line: 2, .. })
        ));
    }
}
