//! NUMA: node distances, the order in which a node's zonelist visits the other nodes
//! (`build_zonelists()` and `find_next_best_node()`, mm/page_alloc.c and mm/mm_init.c, 6.x),
//! the NUMA allocation counters (`zone_statistics()`), and the zonelist cache that
//! `get_page_from_freelist()` used from 2.6.19 until 4.3 (`zlc_setup()`,
//! `zlc_zone_worth_trying()`, `zlc_mark_zone_full()`; deleted in 4.4 by "mm, page_alloc:
//! Delete the zonelist_cache", seed 004).
//!
//! Departures: every node has CPUs (`PENALTY_FOR_NODE_WITH_CPUS` applies to all alike); the
//! zonelists are node-ordered (`numa_zonelist_order=node`, the only order since 4.14 and the
//! x86-64 default since 3.16); 4.3's `find_next_best_node()` load rule (`node_load[node] =
//! load--`) differs from 6.x's (`node_load[node] += 1`) only on machines with more than one
//! remote distance group, and the model uses 6.x's; no cpusets (the zlc's allowed nodes are
//! all nodes); no `zone_reclaim_mode` (the zlc marks a zone full wherever 4.3 does with
//! `zone_reclaim_mode = 0`, its default since 3.16).

use crate::engine::Ns;
pub use crate::machine::LOCAL_DISTANCE;

/// `REMOTE_DISTANCE`: every other node's where the firmware gives no table.
pub const REMOTE_DISTANCE: u32 = 20;
/// `MAX_NUMNODES` of a distribution kernel (`CONFIG_NODES_SHIFT=10`): the weight of a
/// distance against a node's load in `find_next_best_node()`.
const MAX_NUMNODES: u64 = 1 << 10;
/// `PENALTY_FOR_NODE_WITH_CPUS`: nodes without CPUs are preferred as fallbacks.
const PENALTY_FOR_NODE_WITH_CPUS: u64 = 1;
/// The zonelist cache forgets which zones were full once a second (`zlc_setup()`: `HZ`).
pub const ZLC_ZAP_INTERVAL_NS: Ns = 1_000_000_000;

/// `node_distance(a, b)` of `nodes` nodes: the table's entry, else the kernel's default
/// (`LOCAL_DISTANCE` on the diagonal, `REMOTE_DISTANCE` elsewhere).
pub fn node_distance(distances: &[Vec<u32>], a: u32, b: u32) -> u32 {
    match distances
        .get(a as usize)
        .and_then(|row| row.get(b as usize))
    {
        Some(&d) => d,
        None if a == b => LOCAL_DISTANCE,
        None => REMOTE_DISTANCE,
    }
}

/// `find_next_best_node()` (6.x): the local node first, then the nearest node not yet
/// used, nodes below the local one penalised by one ("prefer the next node"), ties broken
/// by `node_load` and then by the lowest node number.
fn find_next_best_node(
    distances: &[Vec<u32>],
    nodes: u32,
    node: u32,
    used: &mut [bool],
    node_load: &[u64],
) -> Option<u32> {
    if !used[node as usize] {
        used[node as usize] = true;
        return Some(node);
    }
    let mut best: Option<(u64, u32)> = None;
    for n in 0..nodes {
        if used[n as usize] {
            continue;
        }
        let mut val = node_distance(distances, node, n) as u64 + u64::from(n < node);
        val += PENALTY_FOR_NODE_WITH_CPUS;
        val = val * MAX_NUMNODES + node_load[n as usize];
        if best.is_none_or(|(min, _)| val < min) {
            best = Some((val, n));
        }
    }
    let (_, n) = best?;
    used[n as usize] = true;
    Some(n)
}

/// The order of nodes in each node's fallback zonelist, as `__build_all_zonelists()` builds
/// them: node 0's first, `node_load` carried from one node's build to the next, so that the
/// first node of each new distance group is penalised and the nodes of a group take turns
/// being first.
pub fn build_node_orders(distances: &[Vec<u32>], nodes: u32) -> Vec<Vec<u32>> {
    let mut node_load = vec![0u64; nodes as usize];
    (0..nodes)
        .map(|local| {
            let mut used = vec![false; nodes as usize];
            let mut order = Vec::with_capacity(nodes as usize);
            let mut prev = local;
            while let Some(node) =
                find_next_best_node(distances, nodes, local, &mut used, &node_load)
            {
                if node_distance(distances, local, node) != node_distance(distances, local, prev) {
                    node_load[node as usize] += 1;
                }
                order.push(node);
                prev = node;
            }
            order
        })
        .collect()
}

/// `struct zonelist_cache` of one node's fallback zonelist (4.3): which of its entries were
/// found full since the last zap.
#[derive(Clone, Debug, Default)]
pub struct Zlc {
    /// `fullzones`: one flag per zonelist entry.
    pub full: Vec<bool>,
    /// `last_full_zap`, in simulated time.
    pub last_full_zap: Ns,
}

impl Zlc {
    pub fn new(entries: usize) -> Zlc {
        Zlc {
            full: vec![false; entries],
            last_full_zap: 0,
        }
    }

    /// `zlc_setup()`: forget the full zones if a second has passed since they were last
    /// forgotten (`time_after(jiffies, zlc->last_full_zap + HZ)`).
    pub fn zlc_setup(&mut self, now: Ns) {
        if now > self.last_full_zap + ZLC_ZAP_INTERVAL_NS {
            self.full.fill(false);
            self.last_full_zap = now;
        }
    }

    /// `zlc_zone_worth_trying()`: entry `i` was not found full (every node is allowed).
    pub fn zlc_zone_worth_trying(&self, i: usize) -> bool {
        !self.full[i]
    }

    /// `zlc_mark_zone_full()`.
    pub fn zlc_mark_zone_full(&mut self, i: usize) {
        self.full[i] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_nodes_fall_back_to_each_other() {
        assert_eq!(build_node_orders(&[], 2), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(build_node_orders(&[], 1), vec![vec![0]]);
    }

    #[test]
    fn nodes_at_one_distance_take_turns_being_the_first_fallback() {
        // Four nodes, all 20 apart (no SLIT), by hand from find_next_best_node(), where
        // val = (distance + below-us + 1 for CPUs) · M + node_load:
        // node 0: 1, 2, 3 tie at 21·M: lowest first, 1 (a new group: node_load[1] = 1), 2, 3.
        // node 1: 0 costs 22·M (below us), 2 and 3 21·M: 2 (node_load[2] = 1), 3, 0.
        // node 2: 3 at 21·M (node_load[3] = 1), then 0 (22·M + 0) before 1 (22·M + 1).
        // node 3: 0 (22·M + 0; node_load[0] = 1), then 1 and 2 tie at 22·M + 1: 1, 2.
        assert_eq!(
            build_node_orders(&[], 4),
            vec![
                vec![0, 1, 2, 3],
                vec![1, 2, 3, 0],
                vec![2, 3, 0, 1],
                vec![3, 0, 1, 2]
            ]
        );
    }

    #[test]
    fn a_nearer_node_comes_before_a_farther_one() {
        // Two sockets of two nodes: 0–1 and 2–3 are 16 apart, across sockets 32.
        let d = vec![
            vec![10, 16, 32, 32],
            vec![16, 10, 32, 32],
            vec![32, 32, 10, 16],
            vec![32, 32, 16, 10],
        ];
        // val = (distance + below-us + 1 for CPUs) · M + node_load, by hand:
        // node 0: 1 (17·M; load[1] = 1), 2 (33·M, a new group; load[2] = 1), 3.
        // node 1: 0 (18·M; load[0] = 1), then 3 (33·M + 0) before 2 (33·M + 1); load[3] = 1.
        // node 2: 3 (17·M + 1; load[3] = 2), then 0 and 1 tie at 34·M + 1: 0 (load[0] = 2), 1.
        // node 3: 2 (18·M + 1), then 1 (34·M + 1) before 0 (34·M + 2).
        assert_eq!(
            build_node_orders(&d, 4),
            vec![
                vec![0, 1, 2, 3],
                vec![1, 0, 3, 2],
                vec![2, 3, 0, 1],
                vec![3, 2, 1, 0]
            ]
        );
        assert_eq!(node_distance(&d, 2, 1), 32);
        assert_eq!(node_distance(&[], 2, 2), LOCAL_DISTANCE);
        assert_eq!(node_distance(&[], 2, 1), REMOTE_DISTANCE);
    }

    #[test]
    fn the_zlc_forgets_full_zones_only_after_a_second() {
        let mut zlc = Zlc::new(3);
        zlc.zlc_setup(500_000_000); // within the first second of boot: nothing to forget
        zlc.zlc_mark_zone_full(1);
        assert!(zlc.zlc_zone_worth_trying(0) && !zlc.zlc_zone_worth_trying(1));
        zlc.zlc_setup(1_000_000_000); // not after last_full_zap + HZ yet
        assert!(!zlc.zlc_zone_worth_trying(1));
        zlc.zlc_setup(1_000_000_001);
        assert!(zlc.zlc_zone_worth_trying(1) && zlc.last_full_zap == 1_000_000_001);
        zlc.zlc_mark_zone_full(2);
        zlc.zlc_setup(2_000_000_001); // exactly HZ after the zap: kept
        assert!(!zlc.zlc_zone_worth_trying(2));
    }
}
