//! Memory management: pages, zones and watermarks, the page allocator, the LRU, reclaim
//! (vmscan), the page cache, and the vmstat counters. Function names are the kernel's.

pub mod filemap;
pub mod gfp;
pub mod hugetlb;
pub mod kswapd;
pub mod lru;
pub mod memcontrol;
pub mod page;
pub mod page_alloc;
pub mod page_ext;
pub mod swap;
pub mod vmscan;
pub mod vmstat;
pub mod zone;
