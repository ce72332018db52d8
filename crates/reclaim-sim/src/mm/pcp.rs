//! Per-CPU page lists (`struct per_cpu_pages`, mm/page_alloc.c) and the per-CPU vmstat
//! deltas of NR_FREE_PAGES (`struct per_cpu_zonestat.vm_stat_diff`, mm/vmstat.c), one of
//! each per (zone, CPU), kept as flat arrays indexed `zone · nr_cpus + cpu`.
//!
//! The lists hold real pages: a page on a list is neither on the buddy lists nor counted in
//! NR_FREE_PAGES. Each list is a ring in one flat array (no allocation per page): the head is
//! where `rmqueue_pcplist` takes and `free_unref_page_commit` adds (`list_add`), the tail
//! where `rmqueue_bulk` appends a refill (`list_add_tail`) and `free_pcppages_bulk` takes
//! (`list_last_entry`). One order-0 list per zone and CPU, for movable pages: the kernel's
//! per-migratetype lists (MIGRATE_PCPTYPES) collapse to its movable one. Departure: unmovable
//! and reclaimable allocations (the model's kernel allocations, rare beside the page cache
//! and anonymous memory) go to and from the buddy lists directly, and a movable page freed
//! from a pageblock of another type (a fallback's) joins the movable list where the kernel
//! would put it on its pageblock type's.
//!
//! 5.13's high-order lists ([`PcpEra::high_order_lists`], 6.x): beside each order-0 list, a
//! list of pageblock-order blocks (the THP order, `pcp_allowed_order()`), which large folios,
//! transparent huge pages and hugetlb pages of pageblock order are allocated from and freed
//! to. An allocation that finds it empty takes `max(batch >> order, 2)` blocks from the
//! buddy lists (`__rmqueue_pcplist` → `rmqueue_bulk`): one for itself, the other parked on
//! the CPU's list, where no watermark check (`__zone_watermark_ok` reads the buddy lists) and
//! no other CPU sees it until a drain. A block counts its 512 pages in `pcp->count`, so a
//! free of one can reach `high` and drain (`free_pcppages_bulk`, the freeing list first,
//! then the others round robin). Departures: orders 1 to PAGE_ALLOC_COSTLY_ORDER keep
//! going to and from the buddy lists (the model's allocations of those orders are rare:
//! readahead's small folios), and only movable pageblocks' blocks use the list (the kernel
//! has a second, non-movable one: 6.6's `order_to_pindex()`).
//!
//! The vmstat side follows `__mod_zone_page_state()` (4.16 and 6.x alike): a CPU's delta
//! folds into the zone's global count when it passes `stat_threshold` either way.
//! `zone_page_state()` reads the global count alone, `zone_page_state_snapshot()` adds the
//! deltas. The model keeps the true count (the buddy lists' pages, `Zone::nr_free_pages`)
//! and the sum of the deltas (`Zone::percpu_diff`), so the global count is their difference.

use super::zone::{Zone, PAGEBLOCK_ORDER, WMARK_HIGH, WMARK_LOW, WMARK_MIN};

/// `rounddown_pow_of_two(x)` for x ≥ 1.
fn rounddown_pow_of_two(x: u64) -> u64 {
    1 << x.ilog2()
}

/// `fls(x)`: the position of the highest set bit, 1-based; 0 for 0.
pub fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// Which kernel's per-CPU page list sizing and draining the model follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcpEra {
    /// 4.16: `batch` from at most 512 KiB, `high = 6 · batch` (`pageset_set_batch`), and
    /// `free_pcppages_bulk` frees exactly `batch` pages once `count ≥ high`. Otherwise 6.2:
    /// `batch` from at most 1 MiB (`SZ_1M / PAGE_SIZE`), `high` from `zone_highsize()` and
    /// the batch freed scaled by `free_factor` (`nr_pcp_free`).
    pub before_5_14: bool,
    /// High-order pages on the per-CPU lists (5.13, "mm/page_alloc: allow high-order pages
    /// to be stored on the per-cpu lists"): the model's pageblock-order list (see the
    /// module). Off, every allocation and free above order 0 uses the buddy lists, as
    /// before 5.13.
    pub high_order_lists: bool,
    /// `percpu_pagelist_high_fraction` (6.x sysctl; 0 = size `high` from the low
    /// watermark). Unused before 5.14.
    pub high_fraction: u64,
}

/// `zone_batchsize()`: about 0.1 % of the zone, at most 512 KiB (4.16) or 1 MiB (6.x) of
/// pages, divided by 4 and clamped to 2^n − 1.
pub fn zone_batchsize(managed_pages: u64, before_5_14: bool) -> u32 {
    let cap_pages = if before_5_14 {
        512 * 1024 / 4096
    } else {
        1024 * 1024 / 4096
    };
    let mut batch = (managed_pages / 1024).min(cap_pages);
    batch /= 4;
    if batch < 1 {
        batch = 1;
    }
    (rounddown_pow_of_two(batch + batch / 2) - 1) as u32
}

/// `zone_highsize()` (6.2): the low watermark (or managed / `high_fraction`) split over the
/// CPUs of the zone's node (`cpu_online` = 0 as `zone_pcp_update` calls it), at least
/// 4 · batch.
pub fn zone_highsize(zone: &Zone, batch: u32, cpus_of_node: u32, high_fraction: u64) -> u32 {
    let total_pages = zone
        .managed_pages
        .checked_div(high_fraction)
        .unwrap_or_else(|| zone.wmark_pages(WMARK_LOW));
    let high = total_pages / u64::from(cpus_of_node.max(1));
    high.max(u64::from(batch) << 2) as u32
}

/// `calculate_normal_threshold()`: `2 · fls(cpus) · (1 + fls(managed >> 15))`, at most 125
/// (`mem` counts 128 MiB units: `27 − PAGE_SHIFT` = 15).
pub fn calculate_normal_threshold(managed_pages: u64, nr_online_cpus: u32) -> i32 {
    let mem = managed_pages >> (27 - 12);
    let threshold = 2 * fls(u64::from(nr_online_cpus)) * (1 + fls(mem));
    threshold.min(125) as i32
}

/// `calculate_pressure_threshold()`: the low–min distance spread over the CPUs, 1 … 125;
/// set while kswapd is awake (`kswapd_try_to_sleep` switches back before it sleeps).
pub fn calculate_pressure_threshold(zone: &Zone, nr_online_cpus: u32) -> i32 {
    let distance = zone.wmark_pages(WMARK_LOW) - zone.wmark_pages(WMARK_MIN);
    let threshold = (distance / u64::from(nr_online_cpus)).max(1);
    threshold.min(125) as i32
}

/// `refresh_zone_stat_thresholds()`'s `percpu_drift_mark`: set only when the deltas of all
/// CPUs could hide a breach of the min watermark behind a passing low one.
pub fn percpu_drift_mark(zone: &Zone, threshold: i32, nr_online_cpus: u32) -> u64 {
    let tolerate_drift = zone.wmark_pages(WMARK_LOW) - zone.wmark_pages(WMARK_MIN);
    let max_drift = u64::from(nr_online_cpus) * threshold as u64;
    if max_drift > tolerate_drift {
        zone.wmark_pages(WMARK_HIGH) + max_drift
    } else {
        0
    }
}

/// `d` after adding `n` pages one at a time (sign `s` = ±1) with `__mod_zone_page_state`'s
/// fold at `t`: each step adds 1 and folds the delta when it passes ±t.
fn mod_per_page(d: i32, n: u32, s: i32, t: i32) -> i32 {
    let mut x = d * s; // the delta in the direction of travel, ≤ t
    let mut left = n as i64;
    let need = i64::from(t - x + 1);
    if left >= need {
        left -= need;
        x = (left % i64::from(t + 1)) as i32;
    } else {
        x += left as i32;
    }
    x * s
}

/// The per-CPU pagesets and NR_FREE_PAGES deltas of every zone and CPU.
pub struct PerCpuPages {
    pub nr_cpus: usize,
    /// The order-0 list's pages (`pcp->count` is [`PerCpuPages::pcp_count`]: these and
    /// the pageblock-order list's).
    pub count: Vec<u32>,
    /// `pcp->high`, `pcp->batch` (the same for every CPU of a zone).
    pub high: Vec<u32>,
    pub batch: Vec<u32>,
    /// `pcp->free_factor` (6.2): doubles the batch freed after frees without allocations.
    pub free_factor: Vec<u8>,
    /// Ring index of each list's head within its slot.
    head: Vec<u32>,
    /// Each slot's first index in `ring` and its size − 1 (a power of two).
    base: Vec<u32>,
    mask: Vec<u32>,
    ring: Vec<u32>,
    /// Each list's pageblock-order blocks (first pfns), tail first, so the head (where
    /// allocations take and frees add) is the end (`high_order_lists`; empty otherwise).
    thp: Vec<Vec<u32>>,
    /// `vm_stat_diff[NR_FREE_PAGES]`.
    pub vm_stat_diff: Vec<i32>,
    /// `stat_threshold` per zone (every CPU of a zone has the same).
    pub stat_threshold: Vec<i32>,
    pub era: PcpEra,
}

impl PerCpuPages {
    /// Empty pagesets for `zones` on `nr_cpus` CPUs (`cpus_of_node` per node), sized as
    /// `zone_pcp_update()` after `setup_per_zone_wmarks()` sizes them, with the normal
    /// vmstat thresholds and drift marks (`refresh_zone_stat_thresholds()`) set on the zones.
    pub fn new(zones: &mut [Zone], nr_cpus: usize, cpus_of_node: u32, era: PcpEra) -> Self {
        let n = zones.len() * nr_cpus;
        let mut pcp = PerCpuPages {
            nr_cpus,
            count: vec![0; n],
            high: vec![0; n],
            batch: vec![0; n],
            free_factor: vec![0; n],
            head: vec![0; n],
            base: vec![0; n],
            mask: vec![0; n],
            ring: Vec::new(),
            thp: vec![Vec::new(); if era.high_order_lists { n } else { 0 }],
            vm_stat_diff: vec![0; n],
            stat_threshold: vec![0; zones.len()],
            era,
        };
        let mut next = 0u32;
        for (zi, z) in zones.iter_mut().enumerate() {
            let (batch, high) = if z.managed_pages == 0 {
                (1, 0) // the boot pageset a zone without memory keeps
            } else if era.before_5_14 {
                // pageset_set_batch(): pageset_update(pcp, 6 * batch, max(1, batch)).
                let batch = zone_batchsize(z.managed_pages, true);
                (batch.max(1), 6 * batch)
            } else {
                // zone_set_pageset_high_and_batch(): new_batch = max(1, zone_batchsize()).
                let batch = zone_batchsize(z.managed_pages, false).max(1);
                (
                    batch,
                    zone_highsize(z, batch, cpus_of_node, era.high_fraction),
                )
            };
            let size = (high.max(batch) + 1).next_power_of_two();
            for cpu in 0..nr_cpus {
                let i = zi * nr_cpus + cpu;
                pcp.batch[i] = batch;
                pcp.high[i] = high;
                pcp.base[i] = next;
                pcp.mask[i] = size - 1;
                next += size;
            }
            let t = calculate_normal_threshold(z.managed_pages, nr_cpus as u32);
            pcp.stat_threshold[zi] = t;
            z.percpu_drift_mark = percpu_drift_mark(z, t, nr_cpus as u32);
        }
        pcp.ring = vec![0; next as usize];
        pcp
    }

    #[inline]
    pub fn idx(&self, zi: usize, cpu: u32) -> usize {
        zi * self.nr_cpus + cpu as usize
    }

    /// List `i`'s ring and the ring positions of its entries `k .. k + n` (head = entry 0),
    /// as the one or two contiguous pieces they occupy: `(ring, first, second)`.
    #[inline]
    fn span(
        &mut self,
        i: usize,
        k: u32,
        n: u32,
    ) -> (&mut [u32], std::ops::Range<usize>, std::ops::Range<usize>) {
        let size = self.mask[i] as usize + 1;
        let base = self.base[i] as usize;
        let from = (self.head[i].wrapping_add(k) & self.mask[i]) as usize;
        let first = (n as usize).min(size - from);
        (
            &mut self.ring[base..base + size],
            from..from + first,
            0..n as usize - first,
        )
    }

    /// Take `n` ≤ count pages from the head of list `i` (`list_first_entry`, `list_del`),
    /// appended to `out` in the order taken.
    #[inline]
    pub fn take_head(&mut self, i: usize, n: u32, out: &mut impl Extend<u32>) {
        debug_assert!(n <= self.count[i]);
        let (ring, a, b) = self.span(i, 0, n);
        out.extend(ring[a].iter().chain(&ring[b]).copied());
        self.head[i] = (self.head[i] + n) & self.mask[i];
        self.count[i] -= n;
    }

    /// Add `pages` at the head of list `i` in turn (`list_add` each): the last ends first.
    #[inline]
    pub fn add_head(&mut self, i: usize, pages: &[u32]) {
        let n = pages.len() as u32;
        debug_assert!(self.count[i] + n <= self.mask[i] + 1);
        self.head[i] = self.head[i].wrapping_sub(n) & self.mask[i];
        let (ring, a, b) = self.span(i, 0, n);
        let (first, second) = ring.split_at_mut(a.start);
        let dst = second[..a.len()].iter_mut().chain(&mut first[b]);
        dst.zip(pages.iter().rev()).for_each(|(d, &p)| *d = p);
        self.count[i] += n;
    }

    /// Append `pages` at the tail of list `i` in turn (`list_add_tail`: a refill).
    #[inline]
    pub fn add_tail(&mut self, i: usize, pages: &[u32]) {
        let n = pages.len() as u32;
        debug_assert!(self.count[i] + n <= self.mask[i] + 1);
        let (ring, a, b) = self.span(i, self.count[i], n);
        let (now, wrapped) = pages.split_at(a.len());
        ring[a].copy_from_slice(now);
        ring[b].copy_from_slice(wrapped);
        self.count[i] += n;
    }

    /// Take `n` ≤ count pages from the tail of list `i` (`list_last_entry` each, as
    /// `free_pcppages_bulk` does), appended to `out` tail first.
    #[inline]
    pub fn take_tail(&mut self, i: usize, n: u32, out: &mut Vec<u32>) {
        debug_assert!(n <= self.count[i]);
        let (ring, a, b) = self.span(i, self.count[i] - n, n);
        out.extend(ring[b].iter().rev().chain(ring[a].iter().rev()));
        self.count[i] -= n;
    }

    /// The pages on list `i`, head first (checks).
    pub fn pages(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        let (base, mask, head) = (self.base[i], self.mask[i], self.head[i]);
        (0..self.count[i]).map(move |k| self.ring[(base + (head.wrapping_add(k) & mask)) as usize])
    }

    /// The pages in list `i`'s pageblock-order blocks.
    #[inline]
    pub fn thp_pages(&self, i: usize) -> u32 {
        self.thp
            .get(i)
            .map_or(0, |l| (l.len() as u32) << PAGEBLOCK_ORDER)
    }

    /// `pcp->count`: list `i`'s pages, its order-0 pages and its blocks' alike.
    #[inline]
    pub fn pcp_count(&self, i: usize) -> u32 {
        self.count[i] + self.thp_pages(i)
    }

    /// List `i`'s pageblock-order blocks, tail first (the head is the last).
    pub fn thp_blocks(&self, i: usize) -> &[u32] {
        self.thp.get(i).map_or(&[], |l| l.as_slice())
    }

    /// Add block `p` at the head of list `i`'s pageblock-order list (`list_add`).
    pub fn thp_add_head(&mut self, i: usize, p: u32) {
        self.thp[i].push(p);
    }

    /// Append `blocks` at the tail of list `i`'s pageblock-order list in turn
    /// (`list_add_tail`: `rmqueue_bulk`'s refill).
    pub fn thp_add_tail(&mut self, i: usize, blocks: &[u32]) {
        let l = &mut self.thp[i];
        l.splice(0..0, blocks.iter().rev().copied());
    }

    /// Take the block at the head of list `i`'s pageblock-order list.
    pub fn thp_take_head(&mut self, i: usize) -> Option<u32> {
        self.thp.get_mut(i).and_then(|l| l.pop())
    }

    /// Take the block at the tail of list `i`'s pageblock-order list (`list_last_entry`).
    pub fn thp_take_tail(&mut self, i: usize) -> Option<u32> {
        let l = self.thp.get_mut(i)?;
        (!l.is_empty()).then(|| l.remove(0))
    }

    /// The pages on every list (they are free but in no zone's NR_FREE_PAGES).
    pub fn total(&self) -> u64 {
        (0..self.count.len())
            .map(|i| u64::from(self.pcp_count(i)))
            .sum()
    }

    /// The pages on zone `zi`'s lists.
    pub fn zone_total(&self, zi: usize) -> u64 {
        let n = self.nr_cpus;
        (zi * n..(zi + 1) * n)
            .map(|i| u64::from(self.pcp_count(i)))
            .sum()
    }

    /// `nr_pcp_high()` (5.14+, "mm/page_alloc: limit the number of pages on PCP lists when
    /// reclaim is active"): list `i`'s `high`, or `min(batch << 2, high)` while kswapd
    /// reclaims its zone (ZONE_RECLAIM_ACTIVE, `reclaim_active`), so that what reclaim frees
    /// reaches the buddy lists, where watermarks and compaction see it. 4.16 had no such
    /// limit. 6.0's `free_high` (frees of orders 1 to PAGE_ALLOC_COSTLY_ORDER) does not
    /// arise: those orders do not use the lists.
    #[inline]
    pub fn nr_pcp_high(&self, i: usize, reclaim_active: bool) -> u32 {
        let high = self.high[i];
        if self.era.before_5_14 || !reclaim_active {
            return high;
        }
        high.min(self.batch[i] << 2)
    }

    /// How many pages `free_unref_page_commit` frees once `count ≥ high` (`high` as
    /// [`PerCpuPages::nr_pcp_high`] gives it): `batch` (4.16), or `nr_pcp_free()` (6.2:
    /// `batch << free_factor`, clamped to batch … high − batch, the factor growing while it
    /// stays below the clamp).
    pub fn nr_pcp_free(&mut self, i: usize, high: u32) -> u32 {
        let batch = self.batch[i];
        if self.era.before_5_14 {
            return batch.min(self.pcp_count(i));
        }
        if high < batch {
            return 1;
        }
        let (min_nr_free, max_nr_free) = (batch, high - batch);
        let scaled = batch << self.free_factor[i];
        if scaled < max_nr_free {
            self.free_factor[i] += 1;
        }
        scaled
            .clamp(min_nr_free, max_nr_free.max(min_nr_free))
            .min(self.pcp_count(i))
    }

    /// `__mod_zone_page_state(zone, NR_FREE_PAGES, delta)` on `cpu` for one change of
    /// `delta` (`rmqueue_bulk`'s one call for its refill, an order-n block's removal).
    #[inline]
    pub fn mod_free(&mut self, z: &mut Zone, zi: usize, cpu: u32, delta: i64) {
        let i = self.idx(zi, cpu);
        let t = self.stat_threshold[zi];
        let old = self.vm_stat_diff[i];
        let x = i64::from(old) + delta;
        let new = if x > i64::from(t) || x < -i64::from(t) {
            0
        } else {
            x as i32
        };
        self.vm_stat_diff[i] = new;
        z.percpu_diff += i64::from(new - old);
    }

    /// `n` calls of `__mod_zone_page_state(zone, NR_FREE_PAGES, ±1)` on `cpu` (sign `s`):
    /// `__free_one_page`'s accounting, page by page, for a batch of order-0 frees.
    #[inline]
    pub fn mod_free_pages(&mut self, z: &mut Zone, zi: usize, cpu: u32, n: u32, s: i32) {
        let i = self.idx(zi, cpu);
        let old = self.vm_stat_diff[i];
        let new = mod_per_page(old, n, s, self.stat_threshold[zi]);
        self.vm_stat_diff[i] = new;
        z.percpu_diff += i64::from(new - old);
    }

    /// `refresh_cpu_vm_stats()` on every CPU (`vmstat_update`): every delta folds.
    pub fn fold_all(&mut self, zones: &mut [Zone]) {
        self.vm_stat_diff.iter_mut().for_each(|d| *d = 0);
        zones.iter_mut().for_each(|z| z.percpu_diff = 0);
    }

    /// `set_pgdat_percpu_threshold(pgdat, calculate_normal_threshold or
    /// calculate_pressure_threshold)` for the zones `zis` of one node.
    pub fn set_pgdat_percpu_threshold(&mut self, zones: &[Zone], zis: &[usize], pressure: bool) {
        let cpus = self.nr_cpus as u32;
        for &zi in zis {
            let z = &zones[zi];
            if z.managed_pages == 0 {
                continue;
            }
            self.stat_threshold[zi] = if pressure {
                calculate_pressure_threshold(z, cpus)
            } else {
                calculate_normal_threshold(z.managed_pages, cpus)
            };
        }
    }

    /// /proc/zoneinfo's `pagesets` block of zone `zi` (`zoneinfo_show_print()`).
    pub fn zoneinfo_pagesets(&self, zi: usize, out: &mut String) {
        use std::fmt::Write;
        out.push_str("  pagesets\n");
        for cpu in 0..self.nr_cpus {
            let i = zi * self.nr_cpus + cpu;
            let _ = write!(
                out,
                "    cpu: {cpu}\n              count: {}\n              high:  {}\n              batch: {}\n  vm stats threshold: {}\n",
                self.pcp_count(i), self.high[i], self.batch[i], self.stat_threshold[zi]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::page::Pages;
    use crate::mm::zone::{free_lists, setup_per_zone_wmarks, NR_FREE_LISTS, ZONE_NORMAL};

    fn zone(managed: u64) -> Zone {
        Zone::new(
            ZONE_NORMAL,
            0,
            0,
            managed,
            free_lists(&Pages::new(0, NR_FREE_LISTS as u32), 0),
        )
    }

    fn era(before_5_14: bool) -> PcpEra {
        PcpEra {
            before_5_14,
            high_order_lists: !before_5_14,
            high_fraction: 0,
        }
    }

    #[test]
    fn batch_and_high_match_the_kernels_formulas() {
        // A 1 GiB zone, 262144 pages. 4.16: min(262144/1024 = 256, 512 KiB = 128) = 128,
        // /4 = 32, rounddown_pow_of_two(32 + 16 = 48) − 1 = 31; high = 6 · 31 = 186.
        assert_eq!(zone_batchsize(262_144, true), 31);
        // 6.2: min(256, 1 MiB = 256) = 256, /4 = 64, rounddown_pow_of_two(96) − 1 = 63.
        assert_eq!(zone_batchsize(262_144, false), 63);
        // A 16 MiB zone, 4096 pages: 4096/1024 = 4, /4 = 1, rounddown_pow_of_two(1) − 1 = 0,
        // which the callers raise to a batch of 1 (`max(1, …)`).
        assert_eq!(zone_batchsize(4096, false), 0);
        // 64 MiB, 16384 pages: 16, /4 = 4, rounddown_pow_of_two(6) − 1 = 3.
        assert_eq!(zone_batchsize(16_384, true), 3);
        // zone_highsize for a 1 GiB zone with min 1000, low 1262 on a 4-CPU node:
        // 1262 / 4 = 315 ≥ 4 · 63 = 252 → 315; on a 16-CPU node 78 < 252 → 252.
        let mut z = zone(262_144);
        z.watermark = [1000, 1262, 1524, 1786];
        assert_eq!(zone_highsize(&z, 63, 4, 0), 315);
        assert_eq!(zone_highsize(&z, 63, 16, 0), 252);
        // percpu_pagelist_high_fraction 8: 262144 / 8 / 4 = 8192.
        assert_eq!(zone_highsize(&z, 63, 4, 8), 8192);
    }

    #[test]
    fn stat_threshold_is_this_machines() {
        // This VM (2 CPUs, /proc/zoneinfo read 2026-11-27): DMA32 managed 772917,
        // `vm stats threshold: 24`; Normal managed 5394266, threshold 36; DMA 3840, 4.
        // DMA32: mem = 772917 >> 15 = 23, fls(23) = 5, fls(2) = 2: 2·2·(1+5) = 24.
        assert_eq!(calculate_normal_threshold(772_917, 2), 24);
        // Normal: 5394266 >> 15 = 164, fls(164) = 8: 2·2·9 = 36.
        assert_eq!(calculate_normal_threshold(5_394_266, 2), 36);
        // DMA: 3840 >> 15 = 0, fls(0) = 0: 2·2·1 = 4.
        assert_eq!(calculate_normal_threshold(3840, 2), 4);
        // The seed-000 machine: 104 CPUs, a 99 M-page Normal zone: 2·7·13 = 182 → 125.
        assert_eq!(calculate_normal_threshold(99_090_432, 104), 125);
    }

    #[test]
    fn pressure_threshold_and_drift_mark() {
        let mut zones = vec![zone(262_144)];
        setup_per_zone_wmarks(&mut zones, 4096, 10);
        let z = &zones[0];
        // min 1024, low = 1024 + max(256, 262) = 1286: distance 262 over 2 CPUs = 131 → 125.
        assert_eq!(z.watermark[..2], [1024, 1286]);
        assert_eq!(calculate_pressure_threshold(z, 2), 125);
        assert_eq!(calculate_pressure_threshold(z, 104), 2);
        // 2 CPUs · 125 = 250 ≤ 262: no drift mark; 4 CPUs · 125 = 500 > 262: high + 500.
        assert_eq!(percpu_drift_mark(z, 125, 2), 0);
        assert_eq!(percpu_drift_mark(z, 125, 4), z.watermark[WMARK_HIGH] + 500);
    }

    #[test]
    fn per_page_fold_is_the_kernels_loop() {
        for t in [1, 4, 24, 125] {
            for d in -t..=t {
                for n in 0..400u32 {
                    for s in [1, -1] {
                        let mut x = d;
                        for _ in 0..n {
                            x += s;
                            if x > t || x < -t {
                                x = 0;
                            }
                        }
                        assert_eq!(mod_per_page(d, n, s, t), x, "d {d} n {n} s {s} t {t}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_scripted_refill_and_drain_leaves_the_kernels_counts() {
        // 4.16, one 1 GiB zone on 2 CPUs: batch 31, high 186. CPU 0 refills (31), takes 5;
        // then 170 frees arrive: the 160th brings count to 186 = high and frees 31 from the
        // tail (the refill's untouched pages, oldest first), leaving 155; 10 more give 165.
        let mut zones = vec![zone(262_144)];
        let mut pcp = PerCpuPages::new(&mut zones, 2, 2, era(true));
        let i = pcp.idx(0, 0);
        assert_eq!((pcp.batch[i], pcp.high[i]), (31, 186));
        let refill: Vec<u32> = (1000..1031).collect();
        pcp.add_tail(i, &refill);
        let mut got = Vec::new();
        pcp.take_head(i, 5, &mut got);
        assert_eq!(got, [1000, 1001, 1002, 1003, 1004]);
        let mut drained = Vec::new();
        for freed in 2000u32..2170 {
            pcp.add_head(i, &[freed]);
            if pcp.count[i] >= pcp.high[i] {
                let n = pcp.nr_pcp_free(i, pcp.high[i]);
                pcp.take_tail(i, n, &mut drained);
            }
        }
        assert_eq!(pcp.count[i], 165);
        // Tail first: the refill's 26 left (1030 … 1005), then the first frees (2000 …).
        let want: Vec<u32> = (1005..1031).rev().chain(2000..2005).collect();
        assert_eq!(drained, want);
        // The head is the last page freed.
        got.clear();
        pcp.take_head(i, 2, &mut got);
        assert_eq!(got, [2169, 2168]);
        // 6.2's nr_pcp_free doubles while frees go on without allocations.
        let mut pcp6 = PerCpuPages::new(&mut zones, 2, 2, era(false));
        let i = pcp6.idx(0, 1);
        pcp6.high[i] = 1000;
        pcp6.count[i] = 1000;
        let frees: Vec<u32> = (0..4).map(|_| pcp6.nr_pcp_free(i, 1000)).collect();
        assert_eq!(frees, [63, 126, 252, 504]);
    }

    #[test]
    fn reclaim_lowers_high_to_four_batches_from_5_14_on() {
        // A 16 GiB zone on 2 CPUs, 6.2's sizing: batch 63 (1 MiB cap: 256 / 4 = 64 → 63),
        // high = low / 2 CPUs, far above 4 · 63 = 252. Under ZONE_RECLAIM_ACTIVE
        // nr_pcp_high() is min(batch << 2, high) = 252; 4.16 has no such limit.
        let mut zones = vec![zone(4 << 20)];
        setup_per_zone_wmarks(&mut zones, 16384, 10);
        let pcp = PerCpuPages::new(&mut zones, 2, 2, era(false));
        let i = pcp.idx(0, 0);
        let low = zones[0].wmark_pages(WMARK_LOW);
        assert_eq!(pcp.batch[i], 63);
        assert_eq!(u64::from(pcp.high[i]), low / 2);
        assert!(pcp.high[i] > 252);
        assert_eq!(pcp.nr_pcp_high(i, false), pcp.high[i]);
        assert_eq!(pcp.nr_pcp_high(i, true), 252);
        let pcp416 = PerCpuPages::new(&mut zones, 2, 2, era(true));
        assert_eq!(pcp416.nr_pcp_high(i, true), pcp416.high[i]);
        // A high already below four batches stays.
        let mut small = PerCpuPages::new(&mut zones, 2, 2, era(false));
        small.high[i] = 200;
        assert_eq!(small.nr_pcp_high(i, true), 200);
    }

    #[test]
    fn frees_under_reclaim_drain_at_the_lowered_high() {
        // free_unref_page_commit() page by page on CPU 0 of the 6.2 zone above while kswapd
        // reclaims it: at count 252 = nr_pcp_high(), nr_pcp_free(252) frees batch << 0 = 63
        // (clamped to 63 … 252 − 63), then 126, the factor growing while below 189; the
        // list never holds more than 252.
        let mut zones = vec![zone(4 << 20)];
        setup_per_zone_wmarks(&mut zones, 16384, 10);
        let mut pcp = PerCpuPages::new(&mut zones, 2, 2, era(false));
        let i = pcp.idx(0, 0);
        let high = pcp.nr_pcp_high(i, true);
        let (mut drained, mut bulks) = (Vec::new(), Vec::new());
        for p in 0u32..700 {
            pcp.add_head(i, &[p]);
            assert!(pcp.count[i] <= high);
            if pcp.count[i] >= high {
                let n = pcp.nr_pcp_free(i, high);
                bulks.push(n);
                pcp.take_tail(i, n, &mut drained);
            }
        }
        // Page 252: −63 → 189; page 315: −126 → 126; page 441: −(252 clamped to 189) → 63;
        // page 630: −189 → 63; then 70 more.
        assert_eq!(bulks, [63, 126, 189, 189]);
        assert_eq!(pcp.count[i], 63 + 70);
        assert_eq!(drained.len() as u32 + pcp.count[i], 700);
    }

    proptest::proptest! {
        /// Each list behaves as the kernel's list would under any mix of multi-page adds and
        /// takes at either end, wrapping around its ring: checked against a deque.
        #[test]
        fn a_list_is_a_deque_at_both_ends(
            ops in proptest::collection::vec((0u8..4, 1u32..200), 0..200),
        ) {
            let mut zones = vec![zone(262_144)];
            let mut pcp = PerCpuPages::new(&mut zones, 2, 2, era(true));
            let i = pcp.idx(0, 1);
            let size = pcp.mask[i] + 1;
            let mut model = std::collections::VecDeque::new();
            let mut next = 0u32;
            for (op, n) in ops {
                let (mut got, mut want) = (Vec::new(), Vec::new());
                match op {
                    0 | 1 => {
                        let n = n.min(size - pcp.count[i]);
                        let pages: Vec<u32> = (next..next + n).collect();
                        next += n;
                        if op == 0 {
                            pcp.add_head(i, &pages);
                            pages.iter().for_each(|&p| model.push_front(p));
                        } else {
                            pcp.add_tail(i, &pages);
                            model.extend(&pages);
                        }
                    }
                    2 => {
                        let n = n.min(pcp.count[i]);
                        pcp.take_head(i, n, &mut got);
                        want.extend(model.drain(..n as usize));
                    }
                    _ => {
                        let n = n.min(pcp.count[i]);
                        pcp.take_tail(i, n, &mut got);
                        want.extend((0..n).map(|_| model.pop_back().unwrap()));
                    }
                }
                proptest::prop_assert_eq!(got, want);
                proptest::prop_assert_eq!(pcp.count[i] as usize, model.len());
            }
            let mut rest = Vec::new();
            pcp.take_head(i, pcp.count[i], &mut rest);
            proptest::prop_assert!(rest.iter().eq(model.iter()));
        }
    }

    #[test]
    fn deltas_fold_at_the_threshold() {
        let mut zones = vec![zone(262_144)];
        zones[0].nr_free_pages = 10_000;
        let mut pcp = PerCpuPages::new(&mut zones, 2, 2, era(true));
        // 262144 >> 15 = 8, fls 4; fls(2) = 2: 2·2·5 = 20.
        assert_eq!(pcp.stat_threshold[0], 20);
        let z = &mut zones[0];
        z.nr_free_pages -= 15;
        pcp.mod_free(z, 0, 0, -15); // −15 stays on CPU 0
        assert_eq!(z.zone_page_state_free(), 10_000);
        assert_eq!(z.zone_page_state_snapshot_free(), 9_985);
        z.nr_free_pages -= 15;
        pcp.mod_free(z, 0, 0, -15); // −30 passes −20: folds
        assert_eq!(z.zone_page_state_free(), 9_970);
        z.nr_free_pages += 25;
        pcp.mod_free_pages(z, 0, 1, 25, 1); // +21 folds at the 21st page, 4 stay
        assert_eq!(pcp.vm_stat_diff[pcp.idx(0, 1)], 4);
        assert_eq!(z.zone_page_state_free(), 9_991);
        pcp.fold_all(&mut zones);
        assert_eq!(zones[0].zone_page_state_free(), 9_995);
    }
}
