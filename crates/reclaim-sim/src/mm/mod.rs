//! Memory management: pages, zones and watermarks, the page allocator, the LRU, reclaim
//! (vmscan) and the vmstat counters. Function names are the kernel's.

pub mod lru;
pub mod page;
pub mod page_alloc;
pub mod swap;
pub mod vmscan;
pub mod vmstat;
pub mod zone;
