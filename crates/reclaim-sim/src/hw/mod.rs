//! The simulated hardware: CPUs with per-task accounting, spinlocks whose waiters burn CPU,
//! and block devices.

pub mod block;
pub mod cpu;
pub mod lock;
pub mod memory;
