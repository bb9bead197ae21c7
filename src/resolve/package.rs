//! The resolver's package enum: the root, the virtual packages that stand for the node,
//! real packages and their extras.

use std::fmt;

use pep508_rs::{ExtraName, PackageName};

use crate::cuda::GpuArch;

/// A fact about the node, pinned to one value and decided before any real package
/// (like conda's `__cuda` and uv's system packages).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VirtualPackage {
    /// The interpreter's version, e.g. `3.12`.
    Python,
    /// The C library's version, e.g. `2.35`; manylinux wheels need a minimum.
    Glibc,
    /// The NVIDIA driver, e.g. `580.82.7` (PEP 440 spelling of `580.82.07`).
    CudaDriver,
    /// One GPU of the node, its version the compute capability, e.g. `sm_90` at `9.0`.
    GpuArch(GpuArch),
    /// The CUDA toolkit present after the change, e.g. `13.0.1`.
    CudaToolkit,
    /// The CUDA runtime the stack links, e.g. `13.0`.
    CudaRuntime,
}

impl fmt::Display for VirtualPackage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Python => f.write_str("python"),
            Self::Glibc => f.write_str("glibc"),
            Self::CudaDriver => f.write_str("cuda-driver"),
            Self::GpuArch(arch) => write!(f, "gpu-arch[{arch}]"),
            Self::CudaToolkit => f.write_str("cuda-toolkit"),
            Self::CudaRuntime => f.write_str("cuda-runtime"),
        }
    }
}

/// A node of the dependency graph, e.g. `torch`, `sglang[srt]` or `cuda-driver`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResolverPackage {
    /// The manifest itself, e.g. `sglang-0.5.9-cuda13`.
    Root(String),
    /// A fact about the node.
    Virtual(VirtualPackage),
    /// A package from an index or a git source, e.g. `torch`.
    Package(PackageName),
    /// A package with an extra, e.g. `sglang[srt]`: depends on the package at the same
    /// version and on the extra's requirements.
    Extra(PackageName, ExtraName),
}

impl fmt::Display for ResolverPackage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Root(name) => f.write_str(name),
            Self::Virtual(virtual_package) => write!(f, "{virtual_package}"),
            Self::Package(name) => write!(f, "{name}"),
            Self::Extra(name, extra) => write!(f, "{name}[{extra}]"),
        }
    }
}
