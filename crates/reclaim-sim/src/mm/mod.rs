//! Memory management: pages, zones and watermarks, the page allocator, the LRU, reclaim
//! (vmscan), the page cache, and the vmstat counters. Function names are the kernel's.

pub mod filemap;
pub mod gfp;
pub mod hugetlb;
pub mod kswapd;
pub mod lru;
pub mod memcontrol;
pub mod memory;
pub mod page;
pub mod page_alloc;
pub mod page_ext;
pub mod page_io;
pub mod swap;
pub mod swap_state;
pub mod swapfile;
pub mod vma;
pub mod vmscan;
pub mod vmscan_anon;
pub mod vmstat;
pub mod workingset;
pub mod zone;
