//! CUDA toolkit → minimum Linux driver, from `manifests/rules/cuda-driver.yaml`.

use serde::Deserialize;

use super::error::RulesError;
use super::file::{At, Parsed, duplicate, layer};
use crate::cuda::{CudaVersion, DriverVersion};

/// The rule file, as embedded in the binary.
pub const CUDA_DRIVER_FILE: &str = "manifests/rules/cuda-driver.yaml";
pub(super) const CUDA_DRIVER_YAML: &str = include_str!("../../manifests/rules/cuda-driver.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DriverFile {
    schema: u32,
    #[serde(default)]
    driver_minimums: Vec<DriverMinimum>,
}

/// One row: a toolkit release and the driver it needs, with where that is documented.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct DriverMinimum {
    /// e.g. `13.0.1`.
    pub toolkit: CudaVersion,
    /// e.g. `580.82.07`.
    pub driver: DriverVersion,
    /// e.g. NVIDIA's release notes, table 3.
    pub source: String,
}

/// The driver a toolkit needs: the row of exactly that update.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DriverRequirement {
    /// The row that applies.
    pub rule: DriverMinimum,
}

/// The table of driver minimums, ordered by toolkit version.
#[derive(Debug, Clone)]
pub struct DriverTable {
    rows: Vec<DriverMinimum>,
}

/// The rows of one or more driver files, each with where it was written, before the
/// checks of the whole table.
#[derive(Debug)]
pub(super) struct DriverLayer {
    rows: Vec<(DriverMinimum, At)>,
}

impl DriverLayer {
    /// Parse one file, with the checks of a file on its own.
    pub(super) fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        let mut parsed: Parsed<DriverFile> = super::file::parse(text, file)?;
        let rows = std::mem::take(&mut parsed.value.driver_minimums);
        let rows = parsed.rows("driver_minimums", rows);
        if let Some((row, at)) = duplicate(&rows, |row| row.toolkit.clone()) {
            return Err(at.invalid(format!("toolkit `{}` is listed twice", row.toolkit)));
        }
        Ok(Self { rows })
    }

    /// Lay a user's rows over these: the row of the same toolkit is replaced.
    pub(super) fn layer(&mut self, over: Self) {
        layer(&mut self.rows, over.rows, |row| row.toolkit.clone(), false);
    }

    /// The table.
    pub(super) fn build(self) -> Result<DriverTable, RulesError> {
        let mut rows: Vec<DriverMinimum> = self.rows.into_iter().map(|(row, _)| row).collect();
        rows.sort_by(|a, b| a.toolkit.cmp(&b.toolkit));
        Ok(DriverTable { rows })
    }
}

impl DriverTable {
    /// The table shipped in the binary, from the one parse of them ([`super::RuleSet::embedded`]).
    pub fn embedded() -> Result<Self, RulesError> {
        Ok(super::RuleSet::embedded()?.drivers)
    }

    /// Parse a rule file's text.
    pub fn parse(text: &str, file: &str) -> Result<Self, RulesError> {
        DriverLayer::parse(text, file)?.build()
    }

    /// The minimum driver for `toolkit`, e.g. 13.0.1 → 580.82.07 (`13.0` is `13.0.0`).
    ///
    /// Only the update's own row answers: an unlisted update (13.0.3) gives `None`, and
    /// the caller refuses it naming this table, never borrowing a neighbour's minimum.
    pub fn minimum_for(&self, toolkit: &CudaVersion) -> Option<DriverRequirement> {
        let row = self.rows.iter().find(|row| row.toolkit == *toolkit)?;
        Some(DriverRequirement { rule: row.clone() })
    }

    /// All rows, ordered by toolkit version.
    pub fn rows(&self) -> &[DriverMinimum] {
        &self.rows
    }
}

impl super::file::RuleFile for DriverFile {
    fn schema(&self) -> u32 {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> DriverTable {
        DriverTable::embedded().unwrap()
    }

    #[test]
    fn seed_minimums() {
        let cases = [
            ("13.0", "580.65.06"),
            ("13.0.1", "580.82.07"),
            ("13.0.2", "580.95.05"),
            ("12.8", "570.26"),
            ("12.8.1", "570.124.06"),
            ("12.9", "575.51.03"),
            ("12.9.1", "575.57.08"),
            ("12.0", "525.60.13"),
            ("12.6", "560.28.03"),
        ];
        for (toolkit, driver) in cases {
            let found = table().minimum_for(&toolkit.parse().unwrap()).unwrap();
            assert_eq!(found.rule.driver.to_string(), driver, "{toolkit}");
        }
    }

    #[test]
    fn unlisted_update_has_no_minimum() {
        assert!(table().minimum_for(&"13.0.3".parse().unwrap()).is_none());
        assert!(table().minimum_for(&"11.8".parse().unwrap()).is_none());
    }

    #[test]
    fn every_update_from_12_0_to_13_1_has_a_row() {
        let updates = super::super::UpdateTable::embedded().unwrap();
        for row in updates.rows() {
            let update = &row.update;
            if *update <= "13.1.0".parse::<CudaVersion>().unwrap()
                && *update != "12.9.2".parse::<CudaVersion>().unwrap()
            {
                assert!(table().minimum_for(update).is_some(), "{update}");
            }
        }
    }

    #[test]
    fn every_row_has_a_source() {
        assert!(
            table()
                .rows()
                .iter()
                .all(|row| row.source.starts_with("https://"))
        );
    }
}
