//! Host probes that need native code (`reclaimlab host probe`), exposed as `_core.probe`.
//!
//! `read_iops` keeps many small O_DIRECT reads in flight, more than Python's threads can
//! (they queue on the interpreter's lock at a few tens of thousands a second).
//!
//! `swap_costs` times the kernel's swap path in the calling process, over memory of its
//! own; the caller provides the swap space (a swap file it adds and removes, journaled) and
//! runs nothing else that swaps meanwhile: the phases check the system-wide counters they
//! expect.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use serde_json::json;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use reclaim_sim::scenario::{Costs, SwapProbe};

use crate::live::{clock_ns, Mapping, Rng};

const PAGE: usize = 4096;
/// How long the probe waits for its writes to complete before giving up.
const WRITEBACK_TIMEOUT: Duration = Duration::from_secs(60);

/// /proc/vmstat's counters the phases check.
#[derive(Clone, Copy, Default)]
struct Counters {
    pswpin: u64,
    pswpout: u64,
    pgmajfault: u64,
    nr_writeback: u64,
}

fn counters() -> PyResult<Counters> {
    let text = std::fs::read_to_string("/proc/vmstat")
        .map_err(|e| PyOSError::new_err(format!("/proc/vmstat: {e}")))?;
    let mut c = Counters::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let value = value.parse().unwrap_or(0);
        match name {
            "pswpin" => c.pswpin = value,
            "pswpout" => c.pswpout = value,
            "pgmajfault" => c.pgmajfault = value,
            "nr_writeback" => c.nr_writeback = value,
            _ => {}
        }
    }
    Ok(c)
}

/// CPU time of the calling thread, in ns (`CLOCK_THREAD_CPUTIME_ID`: the scheduler's exact
/// runtime, not tick samples, and none of the time the thread sleeps, waiting for a tag or
/// an I/O). The phases' user-mode work is one store per page, so this is their kernel time.
fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn madvise(map: &Mapping, from: usize, pages: usize, advice: libc::c_int) -> PyResult<()> {
    // SAFETY: advice on pages [from, from + pages) of our own mapping.
    let rc = unsafe {
        libc::madvise(
            map.addr.add(from * PAGE) as *mut libc::c_void,
            pages * PAGE,
            advice,
        )
    };
    if rc != 0 {
        return Err(PyOSError::new_err(format!(
            "madvise({advice}) failed: {} (MADV_PAGEOUT needs Linux 5.4)",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Touch one word of each page in [from, from + pages): a write of `value`, or a read.
fn touch(map: &Mapping, from: usize, pages: usize, write: Option<u64>) -> u64 {
    let mut sum = 0u64;
    for i in from..from + pages {
        // SAFETY: page i is inside the mapping.
        unsafe {
            let p = map.addr.add(i * PAGE) as *mut u64;
            match write {
                Some(v) => std::ptr::write_volatile(p, v),
                None => sum = sum.wrapping_add(std::ptr::read_volatile(p)),
            }
        }
    }
    sum
}

/// Thread CPU time per page of `f`, run over `pages` pages.
fn cpu_per_page<T>(pages: usize, f: impl FnOnce() -> T) -> (u64, T) {
    let start = thread_cpu_ns();
    let out = f();
    ((thread_cpu_ns() - start) / pages.max(1) as u64, out)
}

/// Fails with `what` unless `got` is at least nine tenths of `want`.
fn expect_most(what: &str, got: u64, want: usize) -> PyResult<()> {
    if got * 10 < want as u64 * 9 {
        return Err(PyOSError::new_err(format!(
            "swap probe: {what}: {got} of {want} pages; is the probe's swap area on, and is \
             anything else swapping?"
        )));
    }
    Ok(())
}

/// Fails with `what` if `got` is more than a hundredth of `of`.
fn expect_few(what: &str, got: u64, of: usize) -> PyResult<()> {
    if got * 100 > of as u64 {
        return Err(PyOSError::new_err(format!(
            "swap probe: {what}: {got} for {of} pages; is anything else swapping?"
        )));
    }
    Ok(())
}

/// The calling thread's allowed CPUs.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is empty; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid out-pointer of the size given.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads the set.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Bind the calling thread to `cpus`; false if the kernel refused.
fn bind(cpus: &[usize]) -> bool {
    // SAFETY: an all-zero cpu_set_t is empty; CPU_SET adds to it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: c < CPU_SETSIZE (it came from allowed_cpus).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t of the size given.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 }
}

/// Gives the calling thread its CPUs back however the remote phase ends (an error or a
/// panic included).
struct Rebind<'a>(&'a [usize]);

impl Drop for Rebind<'_> {
    fn drop(&mut self) {
        bind(self.0);
    }
}

/// Stops the spinner however the remote page-out ends.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// MADV_PAGEOUT of the first `pages` pages of `map`, all dirty: its CPU time per page, once
/// the writes it submitted are done.
fn page_out(map: &Mapping, pages: usize) -> PyResult<u64> {
    let before = counters()?;
    let (ns, rc) = cpu_per_page(pages, || madvise(map, 0, pages, libc::MADV_PAGEOUT));
    rc?;
    let after = counters()?;
    expect_most(
        "pages written by MADV_PAGEOUT",
        after.pswpout - before.pswpout,
        pages,
    )?;
    wait_for_writeback()?;
    Ok(ns)
}

/// A fresh mapping of `pages` pages, each written once (THP refused).
fn dirty_pages(pages: usize, value: u64) -> PyResult<Mapping> {
    let map = Mapping::anon(pages * PAGE)?;
    madvise(&map, 0, pages, libc::MADV_NOHUGEPAGE)?;
    touch(&map, 0, pages, Some(value));
    Ok(map)
}

/// CPU time per page of MADV_PAGEOUT of `pages` fresh dirty pages.
fn pageout_fresh(pages: usize) -> PyResult<u64> {
    page_out(&dirty_pages(pages, 4)?, pages)
}

/// Phase 4 of [`SwapProbe`]: (local, remote) page-out ns per page, or (0, 0) where the
/// probe cannot hold two CPUs (one CPU, or the kernel refused a binding).
fn remote_pageout(pages: usize) -> PyResult<(u64, u64)> {
    let cpus = allowed_cpus();
    let [here, there, ..] = cpus[..] else {
        return Ok((0, 0));
    };
    let _rebind = Rebind(&cpus);
    if !bind(&[here]) {
        return Ok((0, 0));
    }
    let local = pageout_fresh(pages)?;
    // 1: spinning on `there`; 2: could not get there.
    let state = AtomicU8::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // SAFETY: sched_getcpu has no arguments and no side effects.
            let on_there = bind(&[there]) && unsafe { libc::sched_getcpu() } == there as i32;
            state.store(if on_there { 1 } else { 2 }, Ordering::Release);
            while on_there && !stop.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
        });
        // The scope waits for the spinner, so whatever ends this closure must stop it first.
        let _stop = StopOnDrop(&stop);
        while state.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        if state.load(Ordering::Acquire) != 1 {
            return Ok((0, 0));
        }
        Ok((local, pageout_fresh(pages)?))
    })
}

fn wait_for_writeback() -> PyResult<()> {
    let deadline = Instant::now() + WRITEBACK_TIMEOUT;
    while counters()?.nr_writeback > 0 {
        if Instant::now() > deadline {
            return Err(PyOSError::new_err(
                "swap probe: the swap writes did not finish within a minute",
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The phases of [`SwapProbe`] over `size` bytes of anonymous memory (transparent huge
/// pages refused, so each fault and each page-out is of one 4 KiB page). Returns the raw
/// measurements and the `[costs]` keys they give against the model's default costs, as JSON.
#[pyfunction]
fn swap_costs(size: usize) -> PyResult<String> {
    let pages = size / PAGE;
    if pages < 2048 {
        return Err(PyValueError::new_err("the swap probe needs at least 8 MiB"));
    }
    let half = pages / 2;
    let map = dirty_pages(pages, 1)?;
    // Phase 1: page out dirty anonymous pages (the writes are submitted, not awaited by
    // MADV_PAGEOUT; the next phase needs them done).
    let pageout_ns = page_out(&map, pages)?;
    // Phase 2: write faults on folios still in the swap cache.
    let before = counters()?;
    let (swapcache_fault_ns, _) = cpu_per_page(half, || touch(&map, 0, half, Some(2)));
    let after = counters()?;
    expect_few(
        "major faults where the swap cache should hold every page",
        after.pgmajfault - before.pgmajfault,
        half,
    )?;
    // Phase 3: the other half mapped again by reads, paged out clean (freed at once), then
    // written: major faults with swap readahead.
    let rest = pages - half;
    touch(&map, half, rest, None);
    let before = counters()?;
    madvise(&map, half, rest, libc::MADV_PAGEOUT)?;
    let after = counters()?;
    expect_few(
        "pages written again where clean ones were paged out",
        after.pswpout - before.pswpout,
        rest,
    )?;
    let before = counters()?;
    let sys = thread_cpu_ns();
    touch(&map, half, rest, Some(3));
    let swapin_sys_ns = thread_cpu_ns() - sys;
    let after = counters()?;
    let swapin_reads = after.pswpin - before.pswpin;
    expect_most("pages read back from swap", swapin_reads, rest)?;
    drop(map);
    let (pageout_local_ns, pageout_remote_ns) = remote_pageout(half)?;
    let probe = SwapProbe {
        pageout_ns,
        swapcache_fault_ns,
        swapin_sys_ns,
        swapin_reads,
        swapin_pages: rest as u64,
        pageout_local_ns,
        pageout_remote_ns,
    };
    let costs: serde_json::Map<String, serde_json::Value> = probe
        .costs(&Costs::default())
        .into_iter()
        .filter_map(|(key, ns)| Some((key.to_string(), ns?.into())))
        .collect();
    Ok(json!({ "probe": probe, "costs": costs }).to_string())
}

/// `threads` readers of 4 KiB O_DIRECT reads at random offsets of `path` (each its own
/// fixed seed), for `seconds`: (elapsed seconds, reads done). With enough readers the
/// device, not a reader, bounds their rate: its IOPS.
#[pyfunction]
fn read_iops(py: Python<'_>, path: &str, threads: usize, seconds: f64) -> PyResult<(f64, u64)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| PyOSError::new_err(format!("{path}: cannot open with O_DIRECT ({e})")))?;
    let blocks = file.metadata()?.len() / PAGE as u64;
    if blocks == 0 || threads == 0 {
        return Err(PyValueError::new_err(format!(
            "{path}: needs at least one 4 KiB block and one reader"
        )));
    }
    let fd = file.as_raw_fd();
    let start = Instant::now();
    let stop = start + Duration::from_secs_f64(seconds);
    let reads = py.detach(|| {
        std::thread::scope(|scope| {
            let readers: Vec<_> = (0..threads)
                .map(|i| {
                    scope.spawn(move || -> Result<u64, std::io::Error> {
                        let buf =
                            Mapping::anon(PAGE).map_err(|_| std::io::Error::last_os_error())?;
                        let mut rng = Rng::with_seed(0x9E37_79B9 ^ (i as u64 + 1));
                        let mut n = 0;
                        while Instant::now() < stop {
                            let offset = rng.below(blocks) * PAGE as u64;
                            // SAFETY: buf is a page of our own, aligned as O_DIRECT needs.
                            let got = unsafe {
                                libc::pread(
                                    fd,
                                    buf.addr as *mut libc::c_void,
                                    PAGE,
                                    offset as libc::off_t,
                                )
                            };
                            if got < 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                            n += 1;
                        }
                        Ok(n)
                    })
                })
                .collect();
            readers
                .into_iter()
                .map(|r| r.join().expect("a reader does not panic"))
                .sum::<Result<u64, _>>()
        })
    });
    let reads = reads.map_err(|e| PyOSError::new_err(format!("{path}: read failed ({e})")))?;
    Ok((start.elapsed().as_secs_f64(), reads))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let probe = PyModule::new(m.py(), "probe")?;
    probe.add_function(wrap_pyfunction!(read_iops, &probe)?)?;
    probe.add_function(wrap_pyfunction!(swap_costs, &probe)?)?;
    m.add_submodule(&probe)?;
    Ok(())
}
