//! Unit tests of large page-cache folios (`variant.large_folio_readahead` and
//! `large_folio_writes`): the readahead order ramp of `page_cache_ra_order()`, the orders a
//! write takes, reclaim and writeback counting a folio's pages, the fallback to order 0, one
//! place for every page, and determinism.

use crate::kernel::Kernel;
use crate::mm::gfp::GFP_HIGHUSER_MOVABLE;
use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
use crate::mm::page::pg;
use crate::mm::vmscan::{try_to_free_pages, Isolated, ScanControl};
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::ZONE_NORMAL;
use crate::process::Sim;
use crate::sched::TaskClass;
use crate::testing::*;
use crate::workload;

const LARGE: &str = "[variant]\nlarge_folio_readahead = true\n";

/// A dd reader (one task, depth 2) with `bs` = `block_kb` of a file of `file_mb`.
fn add_reader(sim: &mut Sim, block_kb: i64, file_mb: i64) {
    let mut table = toml::Table::new();
    table.insert("tasks".into(), 1.into());
    table.insert("block_kb".into(), block_kb.into());
    table.insert("file_mb".into(), file_mb.into());
    let mut dd = workload::dd::REGISTRATION.build.expect("dd is simulated")(&table);
    dd.start(sim);
}

fn pgpgin_kb(sim: &Sim) -> u64 {
    sim.k().stats.events.get(VmEvent::PgpginKb)
}

/// Runs events until `kb` KiB have been read (at most `limit` events).
fn read_kb(sim: &mut Sim, kb: u64, limit: usize) {
    for _ in 0..limit {
        if pgpgin_kb(sim) >= kb {
            return;
        }
        run_next(sim);
    }
    panic!("read {} KiB of {kb} in {limit} events", pgpgin_kb(sim));
}

/// The page-cache folios of node 0's file lists as (file index, order), by index.
fn cached_folios(k: &mut Kernel) -> Vec<(u32, u8)> {
    let folios: Vec<u32> = [LRU_INACTIVE_FILE, LRU_ACTIVE_FILE]
        .iter()
        .flat_map(|&lru| k.mem.pages.iter(k.memcg.lruvecs[0].list(lru)))
        .collect();
    let mut v: Vec<(u32, u8)> = folios
        .into_iter()
        .map(|p| {
            let index = k.mem.page_ext.index_mut()[p as usize];
            (index, k.mem.pages.fields(p).order)
        })
        .collect();
    v.sort_unstable();
    v
}

/// The orders the windows of `window` pages were read in, from the cached folios of a file
/// read once (each window's folios must all be of one order and tile it).
fn window_orders(k: &mut Kernel, window: u32) -> Vec<u8> {
    let folios = cached_folios(k);
    let mut orders: Vec<u8> = Vec::new();
    let mut next = 0;
    for (index, order) in folios {
        assert_eq!(index, next, "folios tile the file");
        next += 1 << order;
        let w = (index / window) as usize;
        if w == orders.len() {
            orders.push(order);
        }
        assert_eq!(orders[w], order, "window {w} of one order");
    }
    orders
}

fn check_places(k: &Kernel) {
    assert_eq!(k.check_lists(), Ok(()));
    assert_eq!(k.check_conservation(0), Ok(()));
}

#[test]
fn reads_smaller_than_read_ahead_kb_keep_its_window_with_ractl_max_pages() {
    // This machine's dd-squeeze: read_ahead_kb 8192 and bs = 4 MiB. The kernel's window is
    // read_ahead_kb (`ractl_max_pages()`), so the ramp is the 8 MiB reads' of the test
    // below; the model's rule before the switch read windows of one read(), 1024 pages.
    let ramp = |ractl_max_pages: bool, window: u32| {
        let mut sim = Sim::new(kernel_with(
            512,
            0,
            &format!(
                "{LARGE}ractl_max_pages = {ractl_max_pages}
[sysctl]
read_ahead_kb = 8192
"
            ),
        ));
        add_reader(&mut sim, 4096, 64);
        read_kb(&mut sim, 64 << 10, 1_000_000);
        let mut k = sim.k();
        check_places(&k);
        window_orders(&mut k, window)
    };
    assert_eq!(ramp(true, 2048), [0, 2, 4, 6, 8, 9, 9, 9]);
    assert_eq!(
        ramp(false, 1024),
        [0, 2, 4, 6, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]
    );
}

#[test]
fn the_order_ramps_by_two_a_window_to_the_pmd_order() {
    // read_ahead_kb 8192 and bs = 8 MiB: windows of 2048 pages. The first (index 0) is the
    // synchronous one, `page_cache_sync_ra()`: ra->order = 0. Each next one is asynchronous,
    // `page_cache_async_ra()`: ra->order += 2, then page_cache_ra_order() keeps
    // min(order, MAX_PAGECACHE_ORDER = 9, ilog2(2048) = 11): 2, 4, 6, 8, min(10, 9) = 9, and
    // 9 + 2 capped to 9 again. Each window is aligned (a multiple of 2048), so no folio is
    // lowered for alignment. The measured host file read (2048 order-0, 512 order-2, 128
    // order-4, 32 order-6, 8 order-8, then order-9 folios) is this sequence.
    let mut sim = Sim::new(kernel_with(
        512,
        0,
        &format!("{LARGE}[sysctl]\nread_ahead_kb = 8192\n"),
    ));
    add_reader(&mut sim, 8192, 64);
    read_kb(&mut sim, 64 << 10, 1_000_000);
    let mut k = sim.k();
    assert_eq!(window_orders(&mut k, 2048), [0, 2, 4, 6, 8, 9, 9, 9]);
    let folios = cached_folios(&mut k);
    assert_eq!(folios.len(), 2048 + 512 + 128 + 32 + 8 + 3 * 4);
    assert_eq!(
        k.mem.nodes[0].nr_file_pages, 16384,
        "NR_FILE_PAGES counts pages"
    );
    assert_eq!(
        k.mem.nodes[0].nr_file_thps, 12,
        "NR_FILE_THPS counts the order-9 folios"
    );
    assert!(k
        .vmstat()
        .to_proc_text()
        .contains("\nnr_file_hugepages 12\n"));
    assert_eq!(
        k.memcg.lruvecs[0].total(LRU_INACTIVE_FILE),
        16384,
        "the list's size counts pages"
    );
    check_places(&k);
}

#[test]
fn a_cached_page_inside_a_window_keeps_the_order_ramp() {
    // Windows of 2048 pages (read_ahead_kb 8192, bs 8 MiB) of a 64 MiB file, one page of the
    // seventh window (index 12288 + 100) cached before the read. page_cache_ra_order() meets
    // it (-EEXIST) at that window's first order-9 folio and reads the whole window in
    // order-0 folios around it (page_cache_ra_unbounded() passes present folios); the
    // window's first page carries the mark, so the next window is asynchronous and keeps
    // ra->order: order 9 again. (Ending the window at the cached page would restart the
    // ramp at order 0 in the middle of the seventh window.)
    let mut sim = Sim::new(kernel_with(
        512,
        0,
        &format!("{LARGE}[sysctl]\nread_ahead_kb = 8192\n"),
    ));
    add_reader(&mut sim, 8192, 64);
    {
        let mut guard = sim.k();
        let k = &mut *guard;
        let normal = zone_of(k, ZONE_NORMAL);
        let p = k.mem.zones[normal].rmqueue(&mut k.mem.pages, 0).unwrap();
        let cached = 6 * 2048 + 100;
        k.filemap_add_folios(0, cached, &[p], 0);
        k.filemap_index_folios(0, cached, &[p]);
        let f = k.mem.pages.fields_mut(p);
        f.flags = (f.flags & !pg::LOCKED) | pg::UPTODATE;
    }
    // The whole file but the cached page.
    read_kb(&mut sim, (64 << 10) - 4, 1_000_000);
    let mut k = sim.k();
    assert_eq!(window_orders(&mut k, 2048), [0, 2, 4, 6, 8, 9, 0, 9]);
    assert_eq!(
        cached_folios(&mut k).len(),
        2048 + 512 + 128 + 32 + 8 + 4 + 2048 + 4
    );
    check_places(&k);
}

#[test]
fn the_order_is_capped_by_the_window() {
    // Windows of 64 pages (read_ahead_kb 256, bs 256 KiB): 0, 2, 4, then 6 = ilog2(64), and
    // 6 + 2 = 8 capped to 6 from then on.
    let mut sim = Sim::new(kernel_with(
        64,
        0,
        &format!("{LARGE}[sysctl]\nread_ahead_kb = 256\n"),
    ));
    add_reader(&mut sim, 256, 2);
    read_kb(&mut sim, 2 << 10, 1_000_000);
    let mut k = sim.k();
    assert_eq!(window_orders(&mut k, 64), [0, 2, 4, 6, 6, 6, 6, 6]);
    check_places(&k);
}

#[test]
fn without_the_switch_every_folio_is_order_0() {
    let mut sim = Sim::new(kernel_with(64, 0, "[sysctl]\nread_ahead_kb = 256\n"));
    add_reader(&mut sim, 256, 2);
    read_kb(&mut sim, 2 << 10, 1_000_000);
    assert_eq!(window_orders(&mut sim.k(), 64), [0; 8]);
}

/// A kernel whose Normal zone holds `nr` order-9 page-cache folios on the inactive file
/// list (of an endless file: no index), clean and unreferenced, and a task to reclaim.
fn order9_lru(nr: u32) -> (Sim, Vec<u32>) {
    let mut k = kernel_with(512, 0, LARGE);
    let normal = zone_of(&k, ZONE_NORMAL);
    let mut folios = Vec::new();
    for _ in 0..nr {
        let p = k.mem.zones[normal].rmqueue(&mut k.mem.pages, 9).unwrap();
        k.prep_compound_folio(p, 9);
        k.mem.pages.fields_mut(p).owner = 0;
        k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, LRU_INACTIVE_FILE, ZONE_NORMAL);
        k.mem.nodes[0].nr_file_pages += 512;
        k.mem.nodes[0].nr_file_thps += 1;
        folios.push(p);
    }
    k.percpu.pcp.fold_all(&mut k.mem.zones);
    let sim = Sim::new(k);
    (sim, folios)
}

#[test]
fn a_32_page_batch_takes_one_order9_folio_and_frees_it_whole() {
    let (sim, folios) = order9_lru(4);
    let mut guard = sim.k();
    let k = &mut *guard;
    k.current = k.add_task("reclaimer".into(), 0, TaskClass::Workload);
    let normal = zone_of(k, ZONE_NORMAL);
    let free_before = k.mem.zones[normal].nr_free_pages;
    let mut sc = ScanControl::new(false, 32, 0, ZONE_NORMAL);
    let mut batch = Isolated::empty(LRU_INACTIVE_FILE);
    // isolate_lru_folios(): scan < 32 before the tail folio, 512 after it: the loop ends.
    k.isolate_batch(0, 32, &mut sc, 0, &mut batch);
    assert_eq!(batch.pages(), &folios[..1], "the oldest folio, alone");
    assert_eq!((batch.nr_scanned(), batch.nr_taken()), (512, 512));
    assert_eq!(k.mem.nodes[0].nr_isolated[1], 512);
    assert_eq!(k.memcg.lruvecs[0].total(LRU_INACTIVE_FILE), 3 * 512);
    let reclaimed = k.shrink_folio_list(0, &batch, &mut sc, 0);
    assert_eq!(reclaimed, 512);
    assert_eq!(k.stats.events.get(VmEvent::PgscanDirect), 512);
    assert_eq!(k.stats.events.get(VmEvent::PgstealDirect), 512);
    assert_eq!(k.stats.events.get(VmEvent::Pgfree), 512);
    assert_eq!(k.mem.nodes[0].nr_isolated[1], 0);
    assert_eq!(k.mem.nodes[0].nr_file_pages, 3 * 512);
    assert_eq!(k.mem.nodes[0].nr_file_thps, 3, "filemap_unaccount_folio()");
    // One block of order 9 back on the buddy lists, not 512 pages on a per-CPU list.
    assert_eq!(k.mem.zones[normal].nr_free_pages, free_before + 512);
    assert_eq!(k.percpu.pcp.total(), 0);
    let p = folios[0];
    assert!((p..p + 512).all(|q| k.mem.pages.flags(q) & pg::TAIL == 0));
    check_places(k);
}

#[test]
fn direct_reclaim_stops_once_one_folio_passes_nr_to_reclaim() {
    // 64 order-9 folios (32768 pages), no swap: get_scan_count() scans the inactive file list
    // only, 32768 >> DEF_PRIORITY (12) = 8 pages. shrink_lruvec() asks shrink_list() for
    // min(8, SWAP_CLUSTER_MAX) = 8; isolate_lru_folios() takes the tail folio (scan 0 < 8),
    // 512 pages, and stops. 512 reclaimed ≥ nr_to_reclaim (32): do_try_to_free_pages()
    // returns after the one priority, having scanned and reclaimed 512 pages (an order-0
    // LRU would have given 8 at this priority and gone on to the next).
    let (mut sim, _) = order9_lru(64);
    let done = std::rc::Rc::new(std::cell::Cell::new(None));
    let out = std::rc::Rc::clone(&done);
    let id = sim.spawn(
        "direct".into(),
        0,
        TaskClass::Workload,
        move |cx| async move {
            let n = try_to_free_pages(&cx, 0, 0, GFP_HIGHUSER_MOVABLE, 0).await;
            out.set(Some(n));
        },
    );
    sim.k().sched.wake(id, 0);
    for _ in 0..10_000 {
        if done.get().is_some() {
            break;
        }
        run_next(&mut sim);
    }
    assert_eq!(done.get(), Some(512));
    let k = sim.k();
    assert_eq!(k.stats.events.get(VmEvent::PgscanDirect), 512);
    assert_eq!(k.stats.events.get(VmEvent::PgstealDirect), 512);
    assert_eq!(allocstalls(&k), 1);
    check_places(&k);
}

#[test]
fn with_no_block_of_the_order_free_the_window_falls_back_to_order_0() {
    // Every other page of the Normal zone held: 0-order free pages only, so every order > 0
    // allocation fails (reclaim finds only the locked pages of the window in flight, and
    // compaction nothing it may move) and page_cache_ra_order() reads the rest of its window
    // in order-0 folios (do_page_cache_ra()).
    let mut k = kernel_with(64, 0, &format!("{LARGE}[sysctl]\nread_ahead_kb = 256\n"));
    let normal = zone_of(&k, ZONE_NORMAL);
    let taken = fill_zone(&mut k, normal, 0, 0);
    let (odd, even): (Vec<u32>, Vec<u32>) = taken.iter().partition(|&&p| p & 1 == 1);
    for p in odd {
        k.mem.zones[normal].free_one_page(&mut k.mem.pages, p, 0);
    }
    k.percpu.pcp.fold_all(&mut k.mem.zones);
    assert!(k.mem.zones[normal].nr_free[1..].iter().all(|&n| n == 0));
    let held = even.len() as u64;
    let mut sim = Sim::new(k);
    add_reader(&mut sim, 256, 1);
    read_kb(&mut sim, 1 << 10, 1_000_000);
    let mut k = sim.k();
    let folios = cached_folios(&mut k);
    assert_eq!(folios.len(), 256, "the whole file, page by page");
    assert!(folios.iter().all(|&(_, order)| order == 0));
    // The windows after the first try orders 2, 4 and 6, each failing as 6.6's slow path
    // does with compaction (mm/page_alloc.rs): order 2 (not costly) reclaims, compacts
    // sync-light in vain (a stall, a failure) and defers compaction; order 4 (costly,
    // __GFP_NORETRY) finds compaction deferred (a stall counted, a failure) and gives up
    // before reclaim; order 6, the deferral's second attempt, compacts async in vain,
    // reclaims, compacts async again in vain and gives up.
    let ev = |e| k.stats.events.get(e);
    assert_eq!(allocstalls(&k), 2, "orders 2 and 6 reclaimed once each");
    assert_eq!(ev(VmEvent::CompactStall), 4);
    assert_eq!(ev(VmEvent::CompactFail), 4);
    assert_eq!(k.mem.zones[normal].compact_defer_shift, 1);
    assert_eq!(k.stats.nr_oom_retries, 0, "__GFP_NORETRY: no retry");
    assert_eq!(k.check_lists(), Ok(()));
    assert_eq!(k.check_conservation(held), Ok(()));
}

/// A squeezed reader of large folios run for `events` events: its counters and the order of
/// its inactive list.
fn squeezed_run(events: usize) -> (Vec<u64>, Vec<u32>) {
    let mut sim = Sim::new(kernel_with(
        64,
        0,
        &format!("{LARGE}workingset = true\n[sysctl]\nread_ahead_kb = 1024\n"),
    ));
    add_kswapd(&mut sim);
    add_reader(&mut sim, 1024, 128);
    for _ in 0..events {
        run_next(&mut sim);
    }
    let k = sim.k();
    check_places(&k);
    let list = k.memcg.lruvecs[0].list(LRU_INACTIVE_FILE);
    (k.stats.events.v.to_vec(), k.mem.pages.iter(list).collect())
}

#[test]
fn a_reader_under_reclaim_is_deterministic_and_keeps_every_page_in_one_place() {
    // A 128 MiB file through 64 MiB of memory: kswapd and direct reclaim free large folios
    // while the reader allocates them.
    let a = squeezed_run(200_000);
    assert!(a.0[VmEvent::PgstealKswapd as usize] + a.0[VmEvent::PgstealDirect as usize] > 0);
    assert_eq!(a, squeezed_run(200_000));
}

const LARGE_WRITES: &str = "[variant]\nlarge_folio_writes = true\n";

/// One dd writer of `block_kb` writes into files of `file_mb`.
fn add_writer(sim: &mut Sim, block_kb: i64, file_mb: i64) {
    let mut table = toml::Table::new();
    table.insert("tasks".into(), 1.into());
    table.insert("block_kb".into(), block_kb.into());
    table.insert("file_mb".into(), file_mb.into());
    table.insert("jobs".into(), 0.into()); // new files until the test stops
    let mut w = workload::dd_write::REGISTRATION
        .build
        .expect("dd-write is simulated")(&table);
    w.start(sim);
}

fn nr_dirtied(k: &Kernel) -> u64 {
    k.wb.nodes.iter().map(|n| n.nr_dirtied).sum()
}

/// Runs events until `pages` pages have been dirtied (at most `limit` events).
fn dirty_pages(sim: &mut Sim, pages: u64, limit: usize) {
    for _ in 0..limit {
        if nr_dirtied(&sim.k()) >= pages {
            return;
        }
        run_next(sim);
    }
    panic!(
        "dirtied {} pages of {pages} in {limit} events",
        nr_dirtied(&sim.k())
    );
}

/// The folios of the first file written, as (file index, order), by index.
fn first_file_folios(k: &mut Kernel) -> Vec<(u32, u8)> {
    let first = k.wb.inodes[0].mapping;
    let mut v: Vec<(u32, u8)> = [LRU_INACTIVE_FILE, LRU_ACTIVE_FILE]
        .iter()
        .flat_map(|&lru| k.mem.pages.iter(k.memcg.lruvecs[0].list(lru)))
        .collect::<Vec<u32>>()
        .into_iter()
        .filter(|&p| k.mem.pages.fields(p).owner == first)
        .map(|p| {
            (
                k.mem.page_ext.index_mut()[p as usize],
                k.mem.pages.fields(p).order,
            )
        })
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn a_write_takes_the_largest_folio_its_length_and_index_allow() {
    // bs = 96 KiB: writes of 24 pages. __filemap_get_folio(fgf_set_order(len)) takes order
    // ilog2(len) lowered to __ffs(index): at 0, len 24 → order 4 (0–15), then len 8 → 3
    // (16–23); at 24, len 24 → 4, but 24 = 8·3 → 3 (24–31), then len 16 at 32 → 4 (32–47);
    // at 48 (16·3) → 4 (48–63), then 64: len 8 → 3 (64–71); at 72 (8·9) → 3, at 80 → 4.
    let mut sim = Sim::new(kernel_with(512, 0, LARGE_WRITES));
    add_writer(&mut sim, 96, 64);
    dirty_pages(&mut sim, 96, 1_000_000);
    let mut k = sim.k();
    let folios = first_file_folios(&mut k);
    assert_eq!(
        folios[..8],
        [
            (0, 4),
            (16, 3),
            (24, 3),
            (32, 4),
            (48, 4),
            (64, 3),
            (72, 3),
            (80, 4)
        ]
    );
    // NR_FILE_DIRTY and NR_DIRTIED count pages: a folio's dirtying is its pages'.
    let dirty: u64 = k.wb.nodes.iter().map(|n| n.nr_dirty + n.nr_writeback).sum();
    let written: u64 = k.wb.nodes.iter().map(|n| n.nr_written).sum();
    assert_eq!(dirty + written, nr_dirtied(&k));
    check_places(&k);
}

#[test]
fn dd_writes_of_a_mebibyte_are_order_8_folios_written_back_whole() {
    // bs = 1 MiB: 256-page writes at aligned indices, each one order-8 folio (the host's
    // ext4 on 6.18 gave 516 order-8 folios of 678 for a `dd bs=1M` of 512 MiB). The flusher
    // writes them back whole: each completed write counts its folio's pages.
    let mut sim = Sim::new(kernel_with(
        512,
        0,
        &format!("{LARGE_WRITES}[sysctl]\ndirty_background_bytes = 4194304\n"),
    ));
    add_writer(&mut sim, 1024, 64);
    dirty_pages(&mut sim, 16 << 8, 2_000_000);
    for _ in 0..2_000_000 {
        if sim.k().wb.nodes[0].nr_written >= 4 << 8 {
            break;
        }
        run_next(&mut sim);
    }
    let mut k = sim.k();
    let folios = first_file_folios(&mut k);
    assert!(folios.len() >= 16);
    assert!(folios
        .iter()
        .take(16)
        .enumerate()
        .all(|(i, &f)| f == (i as u32 * 256, 8)));
    let written = k.wb.nodes[0].nr_written;
    assert!(
        written >= 4 << 8 && written.is_multiple_of(256),
        "whole folios: {written}"
    );
    assert_eq!(k.check_writeback(), Ok(()));
    check_places(&k);
}

/// A writer of large folios squeezed into 64 MiB for `events` events: its counters.
fn squeezed_writer(events: usize) -> Vec<u64> {
    let mut sim = Sim::new(kernel_with(
        64,
        0,
        &format!("{LARGE_WRITES}[sysctl]\ndirty_ratio = 40\n"),
    ));
    add_kswapd(&mut sim);
    add_writer(&mut sim, 1024, 256);
    for _ in 0..events {
        run_next(&mut sim);
    }
    let k = sim.k();
    check_places(&k);
    assert_eq!(k.check_writeback(), Ok(()));
    let mut v = k.stats.events.v.to_vec();
    v.extend(k.wb.nodes.iter().map(|n| n.nr_written));
    v
}

#[test]
fn a_writer_under_reclaim_frees_large_folios_and_is_deterministic() {
    // 256 MiB files through 64 MiB: kswapd reclaims written-back large folios while the
    // writer dirties new ones; every page stays in one place, and the writeback accounting
    // (dirtied = written + dirty) holds in pages.
    let a = squeezed_writer(300_000);
    assert!(a[VmEvent::PgstealKswapd as usize] + a[VmEvent::PgstealDirect as usize] > 0);
    assert_eq!(a, squeezed_writer(300_000));
}

/// A squeezed reader of large folios with readahead's allocations made with or without
/// `memalloc_nofs_save()`: its counters.
fn squeezed_reader_nofs(nofs: bool) -> Vec<u64> {
    let mut sim = Sim::new(kernel_with(
        64,
        0,
        &format!(
            "{LARGE}readahead_noretry = true\nreadahead_nofs = {nofs}\n[sysctl]\nread_ahead_kb = 1024\n"
        ),
    ));
    add_kswapd(&mut sim);
    add_reader(&mut sim, 1024, 128);
    for _ in 0..200_000 {
        run_next(&mut sim);
    }
    let k = sim.k();
    check_places(&k);
    k.stats.events.v.to_vec()
}

#[test]
fn readahead_inside_memalloc_nofs_save_compacts_without_moving_page_cache() {
    let ev = |v: &[u64], e: VmEvent| v[e as usize];
    let with_fs = squeezed_reader_nofs(false);
    let nofs = squeezed_reader_nofs(true);
    // A 128 MiB file through 64 MiB: the reader's order-9 allocations compact. The only
    // movable memory is the reader's own page cache: with __GFP_FS compaction moves it, and
    // without (`isolate_migratepages_block()`: a folio with a mapping) it moves none and
    // fails more often, so the reader stalls in it more.
    assert!(ev(&with_fs, VmEvent::CompactStall) > 0);
    assert!(ev(&with_fs, VmEvent::PgmigrateSuccess) > 0);
    assert!(ev(&nofs, VmEvent::CompactStall) > ev(&with_fs, VmEvent::CompactStall));
    assert_eq!(ev(&nofs, VmEvent::PgmigrateSuccess), 0);
    assert_eq!(
        ev(&nofs, VmEvent::CompactIsolated),
        0,
        "no folio isolated, so no free page either"
    );
}
