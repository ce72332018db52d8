//! Workloads: the benchmarks of the seed documents as simulated tasks.

pub mod dd;
