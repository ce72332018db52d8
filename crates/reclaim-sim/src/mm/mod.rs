//! Memory management: pages and their side arrays, zones and watermarks, the page allocator,
//! the LRU, reclaim (vmscan, kswapd), memory cgroups, the page cache, anonymous memory and
//! its faults, swap (areas, the swap cache, readahead, swap I/O), workingset detection, and
//! the vmstat counters. Function names are the kernel's (6.x); each module's opening says
//! which kernel file it models and where it departs.

pub mod address_space;
pub mod backing_dev;
pub mod boot_memory;
pub mod compaction;
pub mod congestion;
pub mod filemap;
pub mod gfp;
pub mod huge_memory;
pub mod hugetlb;
pub mod kswapd;
pub mod lru;
pub mod mem_cgroup;
pub mod memcontrol;
pub mod memory;
pub mod mempolicy;
pub mod migrate;
pub mod mm_init;
pub mod mmap;
pub mod numa;
pub mod page;
pub mod page_alloc;
pub mod page_ext;
pub mod page_io;
pub mod page_writeback;
pub mod pcp;
pub mod percpu;
pub mod rmap;
pub mod swap;
pub mod swap_state;
pub mod swapfile;
pub mod truncate;
pub mod vma;
pub mod vmscan;
pub mod vmscan_folio;
pub mod vmstat;
pub mod workingset;
pub mod zone;
