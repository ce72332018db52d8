//! The simulated hardware: CPUs with per-task accounting, spinlocks whose waiters burn CPU,
//! block devices (with a flash drive's dies, if modelled), and each node's memory bandwidth.

pub mod block;
pub mod cpu;
pub mod elevator;
pub mod lock;
pub mod memory;
