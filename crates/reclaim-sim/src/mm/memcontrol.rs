//! Memory cgroups (mm/memcontrol.c). The kernel keeps one lruvec per (memory cgroup, node)
//! and reclaims through `mem_cgroup_lruvec()` (`Kernel::mem_cgroup_lruvec`); the model has
//! that layout, with the root cgroup the only one so far: every page is charged to it, and
//! global reclaim walks its lruvecs.

/// The root memory cgroup's id (`root_mem_cgroup`).
pub const ROOT_MEM_CGROUP: u16 = 0;
