//! cuda-upgrade: moves GPU nodes from one CUDA software stack to another.
pub mod facts;
