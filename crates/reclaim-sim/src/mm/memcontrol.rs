//! Memory cgroups (mm/memcontrol.c). The kernel keeps one lruvec per (memory cgroup, node)
//! and reclaims through `mem_cgroup_lruvec()` (`Kernel::mem_cgroup_lruvec`); the model has
//! that layout, with the root cgroup the only one so far: every page is charged to it, and
//! global reclaim walks its lruvecs.

/// The root memory cgroup's id (`root_mem_cgroup`).
pub const ROOT_MEM_CGROUP: u16 = 0;

use crate::kernel::Kernel;
use crate::process::Cx;

/// `mem_cgroup_charge()`'s `try_charge()` of one page to `memcg`. Only the root cgroup
/// exists so far and it has no limit, so nothing is reclaimed here; a cgroup with a limit
/// (`memory.mode = "cgroup"`, `try_to_free_mem_cgroup_pages()`) is refused by the
/// simulator until memcg reclaim is modelled.
pub async fn try_charge(_cx: &Cx, memcg: u16) {
    debug_assert_eq!(memcg, ROOT_MEM_CGROUP, "only the root memory cgroup exists");
}

impl Kernel {
    /// `commit_charge()`: folio `p` belongs to `memcg` (`folio_memcg`), whose lruvecs it
    /// joins. The root's folios need no side array.
    pub fn mem_cgroup_commit_charge(&mut self, p: u32, memcg: u16) {
        if memcg != ROOT_MEM_CGROUP {
            self.page_ext.memcg_mut()[p as usize] = memcg;
        }
    }

    /// `mem_cgroup_uncharge()` of a page charged to `memcg` that was never committed.
    pub fn mem_cgroup_uncharge(&mut self, memcg: u16) {
        debug_assert_eq!(memcg, ROOT_MEM_CGROUP);
    }

    /// `mem_cgroup_uncharge()` of folio `p` as it is freed: it leaves its cgroup.
    pub fn mem_cgroup_uncharge_folio(&mut self, p: u32) {
        if let Some(m) = self.page_ext.memcg.as_mut() {
            m[p as usize] = ROOT_MEM_CGROUP;
        }
    }
}
