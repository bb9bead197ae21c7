//! Parsers for `nvidia-smi`'s CSV queries: the GPUs (`--query-gpu`) and the compute
//! processes holding them (`--query-compute-apps`). It does not decide whether a GPU is
//! supported by a toolkit, nor whether busy GPUs block a step.
//!
//! See: <https://docs.nvidia.com/deploy/nvidia-smi/index.html>

use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;
use crate::facts::versions::{ComputeCapability, DriverVersion};

/// A field of `nvidia-smi --query-gpu`, e.g. `compute_cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuField {
    /// `index`, e.g. `0`.
    Index,
    /// `name`, e.g. `NVIDIA H200`.
    Name,
    /// `driver_version`, e.g. `580.159.04`.
    DriverVersion,
    /// `compute_cap`, e.g. `9.0` (drivers before 510 cannot answer it).
    ComputeCapability,
    /// `memory.total` in MiB, e.g. `143771`.
    MemoryTotal,
    /// `memory.used` in MiB, e.g. `0`.
    MemoryUsed,
    /// `uuid`, e.g. `GPU-baa74861-c356-a191-cf64-45e0da8ff8c1`.
    Uuid,
}

/// The fields the probe script asks for in section `nvidia-smi-gpus`, in order.
pub const GPU_FIELDS: [GpuField; 7] = [
    GpuField::Index,
    GpuField::Name,
    GpuField::DriverVersion,
    GpuField::ComputeCapability,
    GpuField::MemoryTotal,
    GpuField::MemoryUsed,
    GpuField::Uuid,
];

/// The fields of section `nvidia-smi-gpus-without-capability`, for old drivers.
pub const GPU_FIELDS_WITHOUT_CAPABILITY: [GpuField; 6] = [
    GpuField::Index,
    GpuField::Name,
    GpuField::DriverVersion,
    GpuField::MemoryTotal,
    GpuField::MemoryUsed,
    GpuField::Uuid,
];

/// One GPU, e.g. GPU `0`, an `NVIDIA H200` of capability `9.0` with `143771` MiB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gpu {
    /// The index `nvidia-smi` gives it, e.g. `0`.
    pub index: u32,
    /// The product name, e.g. `NVIDIA H200`.
    pub name: String,
    /// The compute capability, e.g. `9.0`; `None` when the driver cannot tell.
    pub compute_capability: Option<ComputeCapability>,
    /// Total memory in MiB, e.g. `143771`.
    pub memory_total_mib: u64,
    /// Used memory in MiB, e.g. `8719`; volatile, so not part of the facts' digest.
    pub memory_used_mib: Option<u64>,
    /// The GPU's UUID, e.g. `GPU-baa74861-c356-a191-cf64-45e0da8ff8c1`.
    pub uuid: Option<String>,
    /// The compute processes holding this GPU, matched by UUID.
    pub processes: Vec<GpuProcess>,
}

/// A GPU row before processes are attached: the GPU and the driver version it reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuRow {
    /// The GPU, without processes.
    pub gpu: Gpu,
    /// The driver version in the row, e.g. `580.159.04`.
    pub driver_version: Option<DriverVersion>,
}

/// A compute process holding a GPU, e.g. `python3` (pid `433`) with `8710` MiB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    /// The UUID of the GPU it holds, e.g. `GPU-08c1f8a7-dd7c-8654-9f22-042f9211d2e5`.
    pub gpu_uuid: String,
    /// The process id, e.g. `433`.
    pub pid: u32,
    /// The process name, e.g. `python3`.
    pub process_name: String,
    /// GPU memory it uses in MiB, e.g. `8710`; `None` when `nvidia-smi` cannot tell.
    pub used_memory_mib: Option<u64>,
}

/// `nvidia-smi`'s placeholders for values it cannot give, e.g. `[N/A]`.
fn is_unavailable(value: &str) -> bool {
    value.starts_with('[') && value.ends_with(']') || value == "N/A"
}

fn parse_number(value: &str) -> Result<u64, FactsError> {
    value
        .parse::<u64>()
        .map_err(|source| FactsError::InvalidNumber {
            value: value.to_string(),
            source,
        })
}

/// Reads a MiB count with or without its unit: `8710 MiB`, `8710`, or `[N/A]` (→ `None`).
fn parse_mib(value: &str) -> Result<Option<u64>, FactsError> {
    if is_unavailable(value) {
        return Ok(None);
    }
    parse_number(value.trim_end_matches("MiB").trim()).map(Some)
}

/// Parses `--query-gpu=… --format=csv,noheader,nounits` output whose columns are `fields`,
/// e.g. `0, NVIDIA H200, 580.159.04, 9.0, 143771, 0, GPU-baa74861-…`.
///
/// A name containing commas is rejoined: surplus cells belong to the `name` column.
pub fn parse_gpus(text: &str, fields: &[GpuField]) -> Result<Vec<GpuRow>, FactsError> {
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let invalid = || FactsError::InvalidLine {
            line: index + 1,
            text: line.to_string(),
        };
        let mut cells: Vec<String> = line
            .split(',')
            .map(|cell| cell.trim().to_string())
            .collect();
        if cells.len() < fields.len() {
            return Err(invalid());
        }
        if let Some(name_column) = fields.iter().position(|field| *field == GpuField::Name) {
            while cells.len() > fields.len() {
                let surplus = cells.remove(name_column + 1);
                cells[name_column] = format!("{}, {surplus}", cells[name_column]);
            }
        } else if cells.len() > fields.len() {
            return Err(invalid());
        }
        let mut gpu = Gpu {
            index: 0,
            name: String::new(),
            compute_capability: None,
            memory_total_mib: 0,
            memory_used_mib: None,
            uuid: None,
            processes: Vec::new(),
        };
        let mut driver_version = None;
        for (field, cell) in fields.iter().zip(&cells) {
            let cell = cell.as_str();
            match field {
                GpuField::Index => {
                    gpu.index = u32::try_from(parse_number(cell)?).map_err(|_| invalid())?;
                }
                GpuField::Name => gpu.name = cell.to_string(),
                GpuField::DriverVersion if !is_unavailable(cell) => {
                    driver_version = Some(
                        cell.parse::<DriverVersion>()
                            .map_err(|error| FactsError::from(error).on_line(index + 1, line))?,
                    );
                }
                GpuField::ComputeCapability if !is_unavailable(cell) => {
                    gpu.compute_capability = Some(
                        cell.parse()
                            .map_err(|error: FactsError| error.on_line(index + 1, line))?,
                    );
                }
                GpuField::MemoryTotal => {
                    gpu.memory_total_mib = parse_mib(cell)
                        .map_err(|error| error.on_line(index + 1, line))?
                        .unwrap_or_default();
                }
                GpuField::MemoryUsed => {
                    gpu.memory_used_mib =
                        parse_mib(cell).map_err(|error| error.on_line(index + 1, line))?;
                }
                GpuField::Uuid if !is_unavailable(cell) => gpu.uuid = Some(cell.to_string()),
                GpuField::DriverVersion | GpuField::ComputeCapability | GpuField::Uuid => {}
            }
        }
        rows.push(GpuRow {
            gpu,
            driver_version,
        });
    }
    Ok(rows)
}

/// Parses `--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv`,
/// header line included, e.g. `GPU-08c1f8a7-…, 433, python3, 8710 MiB`.
///
/// A process name containing commas is rejoined: it is everything between the pid and
/// the memory column.
pub fn parse_compute_apps(text: &str) -> Result<Vec<GpuProcess>, FactsError> {
    let mut processes = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with("gpu_uuid") {
            continue;
        }
        let invalid = || FactsError::InvalidLine {
            line: index + 1,
            text: line.to_string(),
        };
        let (gpu_uuid, rest) = line.split_once(',').ok_or_else(invalid)?;
        let (pid, rest) = rest.split_once(',').ok_or_else(invalid)?;
        let (process_name, used_memory) = rest.rsplit_once(',').ok_or_else(invalid)?;
        let pid = parse_number(pid.trim())
            .ok()
            .and_then(|pid| u32::try_from(pid).ok())
            .ok_or_else(invalid)?;
        processes.push(GpuProcess {
            gpu_uuid: gpu_uuid.trim().to_string(),
            pid,
            process_name: process_name.trim().to_string(),
            used_memory_mib: parse_mib(used_memory.trim())
                .map_err(|error| error.on_line(index + 1, line))?,
        });
    }
    Ok(processes)
}

/// Attaches each process to the GPU with its UUID; returns the processes that match no
/// GPU (they are kept, never dropped).
pub fn attach_processes(gpus: &mut [Gpu], processes: Vec<GpuProcess>) -> Vec<GpuProcess> {
    let mut unattributed = Vec::new();
    for process in processes {
        match gpus
            .iter_mut()
            .find(|gpu| gpu.uuid.as_deref() == Some(process.gpu_uuid.as_str()))
        {
            Some(gpu) => gpu.processes.push(process),
            None => unattributed.push(process),
        }
    }
    unattributed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::capture;

    /// The columns of the captured `query-gpu.csv` (no UUID column).
    const CAPTURE_FIELDS: [GpuField; 6] = [
        GpuField::Index,
        GpuField::Name,
        GpuField::DriverVersion,
        GpuField::ComputeCapability,
        GpuField::MemoryTotal,
        GpuField::MemoryUsed,
    ];

    #[test]
    fn h200_query_gpu_is_one_h200() {
        let rows = parse_gpus(&capture("query-gpu.csv"), &CAPTURE_FIELDS).unwrap();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.gpu.index, 0);
        assert_eq!(row.gpu.name, "NVIDIA H200");
        assert_eq!(row.gpu.compute_capability.unwrap().to_string(), "9.0");
        assert_eq!(row.gpu.compute_capability.unwrap().sm_name(), "sm_90");
        assert_eq!(row.gpu.memory_total_mib, 143771);
        assert_eq!(row.gpu.memory_used_mib, Some(0));
        assert_eq!(row.gpu.uuid, None);
        assert_eq!(
            row.driver_version.as_ref().unwrap().to_string(),
            "580.159.04"
        );
    }

    #[test]
    fn full_query_gpu_reads_uuid_and_unavailable_values() {
        let text = "0, NVIDIA H200, 580.159.04, 9.0, 143771, [N/A], GPU-baa74861-c356-a191-cf64-45e0da8ff8c1\n\
                    1, NVIDIA RTX PRO 6000, Blackwell, 580.159.04, 12.0, 97887, 3, GPU-1\n";
        let rows = parse_gpus(text, &GPU_FIELDS).unwrap();
        assert_eq!(rows[0].gpu.memory_used_mib, None);
        assert_eq!(
            rows[0].gpu.uuid.as_deref(),
            Some("GPU-baa74861-c356-a191-cf64-45e0da8ff8c1")
        );
        assert_eq!(rows[1].gpu.name, "NVIDIA RTX PRO 6000, Blackwell");
        assert_eq!(rows[1].gpu.compute_capability.unwrap().sm_name(), "sm_120");
    }

    #[test]
    fn malformed_query_gpu_is_an_error() {
        assert!(matches!(
            parse_gpus("0, NVIDIA H200\n", &GPU_FIELDS),
            Err(FactsError::InvalidLine { line: 1, .. })
        ));
        assert!(parse_gpus("0, H200, 580, 9.0, 1, 0, GPU-1\n", &GPU_FIELDS).is_err());
    }

    #[test]
    fn h200_busy_apps_are_one_python_process_with_8_gib() {
        let processes = parse_compute_apps(&capture("query-apps-busy.csv")).unwrap();
        assert_eq!(
            processes,
            vec![GpuProcess {
                gpu_uuid: "GPU-08c1f8a7-dd7c-8654-9f22-042f9211d2e5".to_string(),
                pid: 433,
                process_name: "python3".to_string(),
                used_memory_mib: Some(8710),
            }]
        );
    }

    #[test]
    fn h200_idle_apps_are_none() {
        assert!(
            parse_compute_apps(&capture("query-apps-idle.csv"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn processes_attach_by_uuid_and_strays_are_kept() {
        let rows = parse_gpus(
            "0, NVIDIA H200, 580.159.04, 9.0, 143771, 8719, GPU-08c1f8a7-dd7c-8654-9f22-042f9211d2e5\n",
            &GPU_FIELDS,
        )
        .unwrap();
        let mut gpus: Vec<Gpu> = rows.into_iter().map(|row| row.gpu).collect();
        let mut processes = parse_compute_apps(&capture("query-apps-busy.csv")).unwrap();
        processes.push(GpuProcess {
            gpu_uuid: "GPU-other".to_string(),
            pid: 7,
            process_name: "a, b".to_string(),
            used_memory_mib: None,
        });
        let unattributed = attach_processes(&mut gpus, processes);
        assert_eq!(gpus[0].processes.len(), 1);
        assert_eq!(gpus[0].processes[0].pid, 433);
        assert_eq!(unattributed.len(), 1);
        assert_eq!(unattributed[0].pid, 7);
    }
}
