//! The page allocator: `get_page_from_freelist()` over the zonelist, `wake_all_kswapds()`,
//! and the slow path's decisions (mm/page_alloc.c, 6.2). The slow path's direct reclaim is
//! a resumable `DirectReclaim` driven by the allocating task (see `workload`).
//!
//! Per-CPU page lists are not modelled as lists: pages come straight from the buddy lists,
//! and the PCP batching shows only in the cost model (one zone->lock acquisition per
//! `PCP_BATCH` pages).

use crate::engine::Ns;
use crate::kernel::Kernel;
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::{WMARK_LOW, WMARK_MIN};

/// Pages moved per zone->lock acquisition when a per-CPU list is refilled (`pcp->batch`
/// is 63 on large zones).
pub const PCP_BATCH: u32 = 63;

/// The per-CPU list refill state of one task (cost model only).
#[derive(Clone, Copy, Debug, Default)]
pub struct PcpCredit {
    zone: usize,
    credit: u32,
}

/// Which watermark an allocation attempt checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocWmark {
    Low,
    Min,
}

impl Kernel {
    /// `get_page_from_freelist()` for up to `want` order-0 pages, as that many consecutive
    /// calls would return them: each page comes from the first zone of `nid`'s zonelist
    /// (≤ highest_zoneidx) that still passes the watermark. Pages are appended to `out`.
    /// Returns the CPU time spent (zone->lock whenever the per-CPU list needs a refill).
    #[allow(clippy::too_many_arguments)]
    pub fn get_pages_from_freelist(
        &mut self,
        nid: u32,
        wmark: AllocWmark,
        highest_zoneidx: usize,
        cpu_node: u32,
        pcp: &mut PcpCredit,
        at: Ns,
        want: usize,
        out: &mut Vec<u32>,
    ) -> Ns {
        let w = match wmark {
            AllocWmark::Low => WMARK_LOW,
            AllocWmark::Min => WMARK_MIN,
        };
        let mut cost = 0;
        let mut left = want;
        for i in 0..self.zonelists[nid as usize].len() {
            if left == 0 {
                break;
            }
            let zi = self.zonelists[nid as usize][i];
            let z = &self.zones[zi];
            if z.zone_idx > highest_zoneidx {
                continue;
            }
            // zone_watermark_fast() for order 0 passes while free > mark + lowmem_reserve.
            let floor = z.wmark_pages(w) + z.lowmem_reserve[highest_zoneidx];
            let allowed = z.nr_free_pages.saturating_sub(floor) as usize;
            let n = left.min(allowed);
            let zone_idx = z.zone_idx;
            let mut taken = 0;
            while taken < n {
                if pcp.zone != zi || pcp.credit == 0 {
                    let hold = PCP_BATCH as u64 * self.costs.buddy_ns;
                    cost += self.zone_lock(zi, cpu_node, hold, at + cost).total();
                    *pcp = PcpCredit {
                        zone: zi,
                        credit: PCP_BATCH,
                    };
                }
                // The pages this refill's credit covers, taken in one run.
                let run = (n - taken).min(pcp.credit as usize);
                pcp.credit -= run as u32;
                taken += run;
                let got = self.zones[zi].rmqueue_order0_run(&mut self.pages, run, out);
                debug_assert_eq!(got, run, "watermark passed but the buddy lists are empty");
            }
            self.events
                .count_zid(VmEvent::PgallocDma, zone_idx, n as u64);
            left -= n;
        }
        cost
    }

    /// `wake_all_kswapds()`: wake the kswapd of each node in the zonelist once.
    pub fn wake_all_kswapds(&mut self, nid: u32, order: u32, highest_zoneidx: usize) {
        let mut last = u32::MAX;
        for i in 0..self.zonelists[nid as usize].len() {
            let zi = self.zonelists[nid as usize][i];
            let z = &self.zones[zi];
            if z.zone_idx > highest_zoneidx || z.managed_pages == 0 || z.nid == last {
                continue;
            }
            last = z.nid;
            self.wakeup_kswapd(z.nid, order, highest_zoneidx);
        }
    }

    /// `should_reclaim_retry()` for order 0: retry while any zone could reach its min
    /// watermark with everything reclaimable, and fewer than MAX_RECLAIM_RETRIES passes made
    /// no progress.
    pub fn should_reclaim_retry(
        &self,
        nid: u32,
        highest_zoneidx: usize,
        progress: bool,
        no_progress_loops: &mut u32,
    ) -> bool {
        if progress {
            *no_progress_loops = 0;
        } else {
            *no_progress_loops += 1;
        }
        if *no_progress_loops > crate::kernel::MAX_RECLAIM_RETRIES {
            return false;
        }
        self.zonelists[nid as usize].iter().any(|&zi| {
            let z = &self.zones[zi];
            if z.zone_idx > highest_zoneidx {
                return false;
            }
            let available = (self.zone_reclaimable_pages(zi) + z.nr_free_pages) as i64;
            z.watermark_ok(0, z.wmark_pages(WMARK_MIN), highest_zoneidx, available)
        })
    }
}
