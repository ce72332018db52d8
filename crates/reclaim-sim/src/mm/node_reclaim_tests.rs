//! Memory policies (`mm::mempolicy`) and node reclaim (`vm.zone_reclaim_mode`,
//! `mm::vmscan::node_reclaim_scan`) on a hand-built machine of two nodes of one 64 MiB
//! Normal zone each (16384 pages), one CPU per node: CPU 0 on node 0, CPU 1 on node 1.

use std::cell::RefCell;
use std::rc::Rc;

use crate::kernel::Kernel;
use crate::mm::gfp::{GFP_HIGHUSER_MOVABLE, GFP_NOWAIT};
use crate::mm::mempolicy::{Mempolicy, MpolMode};
use crate::mm::page::pg;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::vmstat::{NumaStat, VmEvent};
use crate::mm::zone::{WMARK_LOW, WMARK_MIN};
use crate::process::Sim;
use crate::sched::TaskClass;
use crate::testing::{add_to_lru, allocstalls, kernel_of, run_next};

/// The two-node machine with `sysctl` as its `[sysctl]` table's text.
fn two_nodes(sysctl: &str) -> Kernel {
    kernel_of(&format!(
        "[machine]\nnodes = 2\ncpus_per_node = 1\nmemory_mb_per_node = 64\ndma32_mb = 0\n\
         [sysctl]\n{sysctl}\n[workload]\nkind = \"dd\"\ntasks = 1\n"
    ))
}

/// The Normal zone of node `nid`.
fn normal(k: &Kernel, nid: usize) -> usize {
    k.mem.nodes[nid].zones[0]
}

/// Takes node 0's Normal zone down to `free` free pages; the first `lru` taken become
/// clean page cache on node 0's inactive file list (`locked`: each PG_locked, so that
/// reclaim keeps it), the rest stay allocated.
fn fill_node0(k: &mut Kernel, free: u64, lru: u64, locked: bool) {
    let zi = normal(k, 0);
    let mut on_lru = 0;
    while k.mem.zones[zi].nr_free_pages > free {
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        if on_lru < lru {
            add_to_lru(k, p);
            if locked {
                k.mem.pages.set(p, pg::LOCKED);
            }
            on_lru += 1;
        }
    }
}

/// A task on `cpu` with memory policy `pol` makes `n` `alloc_pages(gfp, 0)` calls; the run
/// goes on event by event until it has. Returns the simulation and each call's page.
fn allocate(k: Kernel, cpu: u32, pol: Mempolicy, gfp: u32, n: usize) -> (Sim, Vec<Option<u32>>) {
    let mut sim = Sim::new(k);
    let pages = Rc::new(RefCell::new(Vec::new()));
    let out = Rc::clone(&pages);
    let id = sim.spawn(
        "alloc".into(),
        cpu,
        TaskClass::Workload,
        move |cx| async move {
            for _ in 0..n {
                let p = alloc_pages(&cx, gfp, 0, cx.node).await;
                out.borrow_mut().push(p);
            }
        },
    );
    sim.k().sched.tasks[id as usize].mempolicy = pol;
    sim.k().sched.wake(id, 0);
    for _ in 0..100_000 {
        if pages.borrow().len() == n {
            break;
        }
        run_next(&mut sim);
    }
    let pages = pages.borrow().clone();
    assert_eq!(pages.len(), n, "the task made its calls");
    (sim, pages)
}

fn nid_of(k: &Kernel, p: u32) -> u32 {
    k.mem.zones[k.page_zone(p)].nid
}

fn ev(k: &Kernel, e: VmEvent) -> u64 {
    k.stats.events.get(e)
}

fn numastat(k: &Kernel, nid: usize, item: NumaStat) -> u64 {
    k.stats.numastat[nid][item as usize]
}

#[test]
fn interleave_alternates_the_nodes_and_counts_its_hits() {
    let pol = Mempolicy::new(MpolMode::Interleave, &[0, 1]);
    let (sim, pages) = allocate(two_nodes(""), 0, pol, GFP_HIGHUSER_MOVABLE, 10);
    let k = sim.k();
    let nodes: Vec<u32> = pages.iter().map(|p| nid_of(&k, p.unwrap())).collect();
    assert_eq!(nodes, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    // Each page came from the node asked for: ten interleave hits, five on each node, and
    // ten numa_hit (the preferred node is the interleave node); from CPU 0, five local.
    assert_eq!(ev(&k, VmEvent::NumaInterleave), 10);
    assert_eq!(numastat(&k, 0, NumaStat::InterleaveHit), 5);
    assert_eq!(numastat(&k, 1, NumaStat::InterleaveHit), 5);
    assert_eq!(
        (ev(&k, VmEvent::NumaHit), ev(&k, VmEvent::NumaMiss)),
        (10, 0)
    );
    assert_eq!(
        (ev(&k, VmEvent::NumaLocal), ev(&k, VmEvent::NumaOther)),
        (5, 5)
    );
    drop(k);
    // The batch path of the same task goes on with the round robin from il_prev (1).
    let mut k = sim.k();
    let tid = k.sched.tasks.len() as u32 - 1;
    k.current = tid;
    let mut out = Vec::new();
    assert_eq!(
        k.alloc_pages_batch(GFP_HIGHUSER_MOVABLE, 0, 0, 3, &mut out),
        3
    );
    let nodes: Vec<u32> = out.iter().map(|&p| nid_of(&k, p)).collect();
    assert_eq!(nodes, [0, 1, 0]);
    assert_eq!(k.sched.tasks[tid as usize].mempolicy.il_prev, 0);
    assert_eq!(ev(&k, VmEvent::NumaInterleave), 13);
}

#[test]
fn preferred_falls_back_and_counts_numa_foreign_on_the_preferred_node() {
    // Node 0 below its low watermark and nothing to reclaim there (zone_reclaim_mode 0):
    // a task on node 1 preferring node 0 walks node 0's zonelist, fails node 0's zone at
    // the low watermark, and takes node 1's.
    let mut k = two_nodes("");
    let low = k.mem.zones[normal(&k, 0)].wmark_pages(WMARK_LOW);
    fill_node0(&mut k, low - 1, 0, false);
    let pol = Mempolicy::new(MpolMode::Preferred, &[0]);
    let (sim, pages) = allocate(k, 1, pol, GFP_HIGHUSER_MOVABLE, 8);
    let k = sim.k();
    assert!(pages.iter().all(|p| nid_of(&k, p.unwrap()) == 1));
    assert_eq!(
        (ev(&k, VmEvent::NumaHit), ev(&k, VmEvent::NumaMiss)),
        (0, 8)
    );
    // numa_foreign on the preferred node (0), numa_miss on the node that gave the pages.
    assert_eq!(numastat(&k, 0, NumaStat::Foreign), 8);
    assert_eq!(numastat(&k, 1, NumaStat::Foreign), 0);
    assert_eq!(numastat(&k, 1, NumaStat::Miss), 8);
    assert_eq!(ev(&k, VmEvent::NumaForeign), 8);
    // The CPU is node 1's: every page is local to it.
    assert_eq!(
        (ev(&k, VmEvent::NumaLocal), ev(&k, VmEvent::NumaOther)),
        (8, 0)
    );
    assert_eq!(allocstalls(&k), 0);
}

#[test]
fn preferred_takes_its_node_while_it_has_room() {
    let pol = Mempolicy::new(MpolMode::Preferred, &[0]);
    let (sim, pages) = allocate(two_nodes(""), 1, pol, GFP_HIGHUSER_MOVABLE, 4);
    let k = sim.k();
    assert!(pages.iter().all(|p| nid_of(&k, p.unwrap()) == 0));
    assert_eq!(
        (ev(&k, VmEvent::NumaHit), ev(&k, VmEvent::NumaOther)),
        (4, 4)
    );
    assert_eq!(numastat(&k, 0, NumaStat::Hit), 4);
}

#[test]
fn bind_never_allocates_off_its_nodes() {
    // Node 0 at its min watermark with 4000 reclaimable page-cache pages, node 1 empty:
    // a task on node 1 bound to node 0 reclaims node 0 (direct reclaim, the nodemask's
    // nodes only) rather than take a page of node 1.
    let mut k = two_nodes("");
    let min = k.mem.zones[normal(&k, 0)].wmark_pages(WMARK_MIN);
    fill_node0(&mut k, min, 4000, false);
    let pol = Mempolicy::new(MpolMode::Bind, &[0]);
    let (sim, pages) = allocate(k, 1, pol, GFP_HIGHUSER_MOVABLE, 200);
    let k = sim.k();
    assert!(pages.iter().all(|p| nid_of(&k, p.unwrap()) == 0));
    // The preferred zone is node 0's (the first of node 1's zonelist in the mask): every
    // page a hit, none local to the CPU.
    assert_eq!(
        (ev(&k, VmEvent::NumaHit), ev(&k, VmEvent::NumaMiss)),
        (200, 0)
    );
    assert_eq!(
        (ev(&k, VmEvent::NumaLocal), ev(&k, VmEvent::NumaOther)),
        (0, 200)
    );
    assert!(allocstalls(&k) > 0 && ev(&k, VmEvent::PgstealDirect) > 0);
    assert_eq!(
        k.mem.zones[normal(&k, 1)].nr_free_pages,
        k.mem.zones[normal(&k, 1)].managed_pages
    );
    assert_eq!(k.check_lists(), Ok(()));
}

#[test]
fn without_zone_reclaim_mode_the_allocation_goes_remote_at_once() {
    let mut k = two_nodes("zone_reclaim_mode = 0");
    let low = k.mem.zones[normal(&k, 0)].wmark_pages(WMARK_LOW);
    fill_node0(&mut k, low - 10, 4000, false);
    let (sim, pages) = allocate(k, 0, Mempolicy::default(), GFP_HIGHUSER_MOVABLE, 1);
    let k = sim.k();
    assert_eq!(nid_of(&k, pages[0].unwrap()), 1);
    assert_eq!(
        (ev(&k, VmEvent::NumaMiss), ev(&k, VmEvent::NumaForeign)),
        (1, 1)
    );
    assert_eq!(ev(&k, VmEvent::PgscanDirect), 0);
    assert!(!k.vmstat().to_proc_text().contains("zone_reclaim_failed"));
}

#[test]
fn zone_reclaim_mode_reclaims_the_local_node_before_going_remote() {
    // Node 0 ten pages below its low watermark (226; min 181), 4000 clean page-cache pages
    // on its inactive list (more than min_unmapped_pages, 16384 · 1 % = 163). Each call's
    // node_reclaim(): shrink_node() at NODE_RECLAIM_PRIORITY for max(1, SWAP_CLUSTER_MAX) =
    // 32 pages (scan target 4000 >> 4 = 250, taken 32 at a time, stopping at 32 reclaimed):
    // one batch of 32, all freed — onto CPU 0's per-CPU list (high 226), which
    // NR_FREE_PAGES does not count, so the zone still fails zone_watermark_ok() and the
    // page is node 1's, as 6.6's would be. Seven calls fill the list to 7 · 32 = 224 pages;
    // the eighth's reclaim takes it past 226, free_pcppages_bulk() returns pages to the
    // buddy lists, the zone passes, and from then on node 0 serves, with no more reclaim.
    let mut k = two_nodes("zone_reclaim_mode = 1");
    let zi = normal(&k, 0);
    assert_eq!(k.mem.nodes[0].min_unmapped_pages, 163);
    let low = k.mem.zones[zi].wmark_pages(WMARK_LOW);
    assert_eq!(low, 226);
    assert_eq!(k.percpu.pcp.high[k.percpu.pcp.idx(zi, 0)], 226);
    fill_node0(&mut k, low - 10, 4000, false);
    let (sim, pages) = allocate(k, 0, Mempolicy::default(), GFP_HIGHUSER_MOVABLE, 12);
    let k = sim.k();
    let nodes: Vec<u32> = pages.iter().map(|p| nid_of(&k, p.unwrap())).collect();
    assert_eq!(nodes, [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(
        (ev(&k, VmEvent::NumaHit), ev(&k, VmEvent::NumaMiss)),
        (5, 7)
    );
    assert_eq!(numastat(&k, 0, NumaStat::Foreign), 7);
    assert_eq!(ev(&k, VmEvent::PgscanDirect), 8 * 32);
    assert_eq!(ev(&k, VmEvent::PgstealDirect), 8 * 32);
    // Node reclaim is not direct reclaim: no allocstall; each succeeded.
    assert_eq!(allocstalls(&k), 0);
    assert_eq!(ev(&k, VmEvent::PgscanZoneReclaimFailed), 0);
    assert!(!k.mem.nodes[0].reclaim_locked);
    assert!(k
        .vmstat()
        .to_proc_text()
        .contains("\nzone_reclaim_failed 0\n"));
    assert_eq!(k.check_lists(), Ok(()));
}

#[test]
fn node_reclaim_that_frees_nothing_counts_a_failure_and_goes_remote() {
    // The same, every page-cache page locked: shrink_node() at priorities 4 down to 0
    // reclaims none (NODE_RECLAIM_SOME), the zone still fails, the next zone (node 1's)
    // serves, and zone_reclaim_failed counts the failure.
    let mut k = two_nodes("zone_reclaim_mode = 1");
    let low = k.mem.zones[normal(&k, 0)].wmark_pages(WMARK_LOW);
    fill_node0(&mut k, low - 10, 4000, true);
    let (sim, pages) = allocate(k, 0, Mempolicy::default(), GFP_HIGHUSER_MOVABLE, 1);
    let k = sim.k();
    assert_eq!(nid_of(&k, pages[0].unwrap()), 1);
    assert_eq!(ev(&k, VmEvent::PgscanZoneReclaimFailed), 1);
    assert!(ev(&k, VmEvent::PgscanDirect) > 0);
    assert_eq!(ev(&k, VmEvent::PgstealDirect), 0);
    assert_eq!(ev(&k, VmEvent::NumaMiss), 1);
    assert!(!k.mem.nodes[0].reclaim_locked);
}

#[test]
fn node_reclaim_leaves_a_node_of_little_page_cache_and_a_remote_cpus_node_alone() {
    // 100 page-cache pages (≤ min_unmapped_pages, 163): NODE_RECLAIM_FULL, no scan.
    let mut k = two_nodes("zone_reclaim_mode = 1");
    let low = k.mem.zones[normal(&k, 0)].wmark_pages(WMARK_LOW);
    fill_node0(&mut k, low - 10, 100, false);
    let (sim, pages) = allocate(k, 0, Mempolicy::default(), GFP_HIGHUSER_MOVABLE, 1);
    let k = sim.k();
    assert_eq!(nid_of(&k, pages[0].unwrap()), 1);
    assert_eq!(ev(&k, VmEvent::PgscanDirect), 0);
    assert_eq!(ev(&k, VmEvent::PgscanZoneReclaimFailed), 0);
    drop(k);
    // 4000 of them, but the task runs on node 1 and prefers node 0: node 0 has CPUs and is
    // not the task's (NODE_RECLAIM_NOSCAN): node 1 serves without a scan.
    let mut k = two_nodes("zone_reclaim_mode = 1");
    fill_node0(&mut k, low - 10, 4000, false);
    let pol = Mempolicy::new(MpolMode::Preferred, &[0]);
    let (sim, pages) = allocate(k, 1, pol, GFP_HIGHUSER_MOVABLE, 1);
    let k = sim.k();
    assert_eq!(nid_of(&k, pages[0].unwrap()), 1);
    assert_eq!(ev(&k, VmEvent::PgscanDirect), 0);
    // And one that may not block (GFP_NOWAIT) is not delayed by a scan either.
    let mut k = two_nodes("zone_reclaim_mode = 1");
    fill_node0(&mut k, low - 10, 4000, false);
    let (sim, pages) = allocate(k, 0, Mempolicy::default(), GFP_NOWAIT, 1);
    let k = sim.k();
    assert_eq!(nid_of(&k, pages[0].unwrap()), 1);
    assert_eq!(ev(&k, VmEvent::PgscanDirect), 0);
}

#[test]
fn a_batch_stops_where_node_reclaim_would_scan() {
    // zone_reclaim_mode 1, node 0 ten pages below low with reclaimable page cache: the
    // batch takes nothing (its first call would reclaim) and leaves the node unlocked;
    // with mode 0 it takes all 32 from node 1.
    for (mode, got, remote) in [(1, 0, 0), (0, 32, 32)] {
        let mut k = two_nodes(&format!("zone_reclaim_mode = {mode}"));
        let low = k.mem.zones[normal(&k, 0)].wmark_pages(WMARK_LOW);
        fill_node0(&mut k, low - 10, 4000, false);
        k.current = k.add_task("batch".into(), 0, TaskClass::Workload);
        let mut out = Vec::new();
        assert_eq!(
            k.alloc_pages_batch(GFP_HIGHUSER_MOVABLE, 0, 0, 32, &mut out),
            got
        );
        assert_eq!(out.iter().filter(|&&p| nid_of(&k, p) == 1).count(), remote);
        assert!(!k.mem.nodes[0].reclaim_locked);
    }
}

#[test]
fn node_reclaim_runs_are_deterministic() {
    let run = || {
        let mut k = two_nodes("zone_reclaim_mode = 1");
        let low = k.mem.zones[normal(&k, 0)].wmark_pages(WMARK_LOW);
        fill_node0(&mut k, low - 10, 4000, false);
        let pol = Mempolicy::new(MpolMode::Interleave, &[0, 1]);
        let (sim, pages) = allocate(k, 0, pol, GFP_HIGHUSER_MOVABLE, 300);
        let text = sim.k().vmstat().to_proc_text();
        (pages, text)
    };
    assert_eq!(run(), run());
}
