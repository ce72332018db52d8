//! A task's NUMA memory policy (mm/mempolicy.c, 6.6): `set_mempolicy(2)`'s MPOL_DEFAULT,
//! MPOL_BIND, MPOL_INTERLEAVE and MPOL_PREFERRED as a workload's `mempolicy` and `nodes`
//! keys, and what `alloc_pages()` makes of them: the node whose zonelist is walked
//! (`policy_node()`), the nodes the walk may take pages from (`policy_nodemask()`), and
//! the round robin of an interleaving task (`interleave_nodes()`, with NUMA_INTERLEAVE_HIT
//! counted by `alloc_page_interleave()` when the page came from the node asked for).
//!
//! Departures: the policy is the task's (`current->mempolicy`), set before it first runs;
//! no VMA policies (`mbind(2)`), so an anonymous fault of an interleaving task takes the
//! next node of the round robin where 6.6's `vma_alloc_folio()` takes the node of the
//! page's offset in the VMA (`interleave_nid()` → `offset_il_node()`): the two agree for a
//! task that faults its one VMA in from the start, as usemem does. No MPOL_LOCAL,
//! MPOL_PREFERRED_MANY or mode flags (MPOL_F_STATIC_NODES, MPOL_F_RELATIVE_NODES), no
//! cpusets (every node is allowed), and no MPOL_BIND's `__GFP_THISNODE` warning (no caller
//! of the model's passes both).

use serde::{Deserialize, Serialize};

use crate::mm::gfp::{gfp_zone, Gfp, __GFP_THISNODE};

/// `enum mempolicy_mode`, as a workload's `mempolicy` key names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MpolMode {
    /// MPOL_DEFAULT: the local node's zonelist, every node allowed.
    #[default]
    Default,
    /// MPOL_BIND: the local node's zonelist, only `nodes` allowed.
    Bind,
    /// MPOL_INTERLEAVE: each allocation on the next node of `nodes`, falling back as
    /// MPOL_DEFAULT would from there.
    Interleave,
    /// MPOL_PREFERRED: the first of `nodes` first, then its zonelist.
    Preferred,
}

impl MpolMode {
    pub fn is_default(&self) -> bool {
        *self == MpolMode::Default
    }
}

/// `MAX_NUMNODES` as far as a policy's node mask goes (a `u64`).
pub const MPOL_MAX_NODES: u32 = 64;

/// `struct mempolicy` of a task, with the task's `il_prev`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mempolicy {
    pub mode: MpolMode,
    /// `pol->nodes`, one bit per node.
    pub nodes: u64,
    /// `current->il_prev`: the node of the last interleaved allocation; `do_set_mempolicy()`
    /// starts it at `MAX_NUMNODES - 1` so that the first is the mask's first node.
    pub il_prev: u32,
}

impl Mempolicy {
    /// `do_set_mempolicy(mode, nodes)`: MPOL_DEFAULT ignores `nodes`.
    pub fn new(mode: MpolMode, nodes: &[u32]) -> Mempolicy {
        let mask = if mode == MpolMode::Default {
            0
        } else {
            nodes.iter().fold(0u64, |m, &n| m | 1 << n)
        };
        Mempolicy {
            mode,
            nodes: mask,
            il_prev: MPOL_MAX_NODES - 1,
        }
    }

    /// `first_node(pol->nodes)`.
    fn first_node(&self) -> u32 {
        self.nodes.trailing_zeros()
    }

    /// `policy_node(gfp, pol, nd)`: the node whose zonelist the allocation walks, `nd`
    /// being the local node (`numa_node_id()`): MPOL_PREFERRED's node, else `nd`.
    pub fn policy_node(&self, nd: u32) -> u32 {
        if self.mode == MpolMode::Preferred {
            return self.first_node();
        }
        nd
    }

    /// `policy_nodemask(gfp, pol)`: MPOL_BIND's nodes, when the allocation's highest zone
    /// is one the policy applies to (`apply_policy_zone()`: at least `policy_zone`, the
    /// highest populated zone below ZONE_MOVABLE); 0 (the kernel's NULL: every node)
    /// otherwise.
    pub fn policy_nodemask(&self, gfp: Gfp, policy_zone: usize) -> u64 {
        if self.mode == MpolMode::Bind && gfp_zone(gfp) >= policy_zone {
            return self.nodes;
        }
        0
    }

    /// `next_node_in(il_prev, pol->nodes)` without moving `il_prev`: the node
    /// `interleave_nodes()` returns next.
    pub fn next_interleave_node(&self) -> u32 {
        let above = if self.il_prev + 1 >= MPOL_MAX_NODES {
            0
        } else {
            self.nodes & (u64::MAX << (self.il_prev + 1))
        };
        if above != 0 {
            above.trailing_zeros()
        } else {
            self.first_node()
        }
    }

    /// `interleave_nodes(pol)`: the next node of the mask after `il_prev`, wrapping, which
    /// becomes `il_prev`.
    pub fn interleave_nodes(&mut self) -> u32 {
        let next = self.next_interleave_node();
        self.il_prev = next;
        next
    }

    /// Whether `alloc_pages()` uses the task's policy for `gfp` (`get_task_policy()` unless
    /// `__GFP_THISNODE`; the model allocates in no interrupt).
    #[inline]
    pub fn applies(&self, gfp: Gfp) -> bool {
        self.mode != MpolMode::Default && gfp & __GFP_THISNODE == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::gfp::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
    use crate::mm::zone::{ZONE_DMA32, ZONE_NORMAL};

    #[test]
    fn interleave_goes_round_the_mask_from_its_first_node() {
        let mut pol = Mempolicy::new(MpolMode::Interleave, &[1, 3, 4]);
        assert_eq!(pol.nodes, 0b11010);
        let seq: Vec<u32> = (0..7).map(|_| pol.interleave_nodes()).collect();
        assert_eq!(seq, [1, 3, 4, 1, 3, 4, 1]);
        assert_eq!(pol.next_interleave_node(), 3);
        assert_eq!(pol.il_prev, 1);
    }

    #[test]
    fn policy_node_and_nodemask_follow_the_mode() {
        let local = 1;
        let pref = Mempolicy::new(MpolMode::Preferred, &[0]);
        assert_eq!(pref.policy_node(local), 0);
        assert_eq!(pref.policy_nodemask(GFP_HIGHUSER_MOVABLE, ZONE_NORMAL), 0);
        let bind = Mempolicy::new(MpolMode::Bind, &[0]);
        assert_eq!(bind.policy_node(local), local);
        assert_eq!(bind.policy_nodemask(GFP_HIGHUSER_MOVABLE, ZONE_NORMAL), 1);
        // A machine of DMA32 only: policy_zone is DMA32 and the policy applies to it.
        assert_eq!(bind.policy_nodemask(GFP_KERNEL, ZONE_DMA32), 1);
        let def = Mempolicy::new(MpolMode::Default, &[0, 1]);
        assert_eq!((def.nodes, def.policy_node(local)), (0, local));
        assert!(!def.applies(GFP_HIGHUSER_MOVABLE));
        assert!(bind.applies(GFP_HIGHUSER_MOVABLE));
        assert!(!bind.applies(GFP_HIGHUSER_MOVABLE | __GFP_THISNODE));
    }
}
