//! Workload helpers for live runs (`reclaimlab.live.helpers`), exposed as `_core.live`.
//!
//! Each function is one task of a benchmark that needs to touch memory faster than Python can:
//! vm-scalability's usemem, mmtests' stutter latency probe and memhog, and mmtests'
//! micro/mapped-file-stream. Python starts each task as its own child process, so a function
//! here owns the whole process: it may block for the whole run and writes its results to stdout.
//! Results come back as JSON text, as everywhere in the bindings.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

use reclaim_sim::workload::usemem::Histogram;

const PAGE: usize = 4096;

/// An anonymous or file mapping, unmapped on drop.
pub(crate) struct Mapping {
    pub(crate) addr: *mut u8,
    len: usize,
}

impl Mapping {
    pub(crate) fn anon(len: usize) -> PyResult<Self> {
        Self::map(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)
    }

    fn map(len: usize, flags: libc::c_int, fd: libc::c_int) -> PyResult<Self> {
        if len == 0 {
            return Err(PyValueError::new_err("mapping size must be positive"));
        }
        // SAFETY: a fresh mapping at a kernel-chosen address; nothing else aliases it.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(PyOSError::new_err(format!(
                "mmap of {len} bytes failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Mapping {
            addr: addr as *mut u8,
            len,
        })
    }

    fn words(&self) -> *mut u64 {
        self.addr as *mut u64
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: addr/len come from a successful mmap and are unmapped once.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}

/// xorshift64*: usemem uses lrand48_r; any uniform generator gives the same access pattern.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator with a fixed seed (never the all-zero state, which xorshift keeps).
    pub(crate) fn with_seed(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    fn seeded() -> Self {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Rng((t ^ ((std::process::id() as u64) << 32)) | 1)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) % n
    }
}

/// One usemem task (vm-scalability usemem.c @0e99666, `do_rw_once` repeated): map `size`
/// bytes of anonymous memory and write every 8-byte word, sequentially or at uniformly random
/// indices, `repeats` times (0 = until `runtime_s`), stopping once `runtime_s` (0 = no limit) has
/// passed; checked every 65536 words as usemem does. Sequential repeats verify the values written
/// by the previous pass, as usemem does, so a swap-in that returns the wrong page fails loudly.
/// Bytes counted as usemem counts them: size/8 for the allocation plus 8 per word accessed;
/// KB/s = (bytes·10⁶ >> 10) / µs.
///
/// `start_at_ns` (CLOCK_MONOTONIC, 0: at once): the task sleeps until then before it maps its
/// memory, so that tasks started one after another begin together, as usemem's forked
/// children (`usemem -n`) do; `start_ns` in the result is when it began.
#[pyfunction]
#[pyo3(signature = (size, random=false, repeats=1, runtime_s=0.0, start_at_ns=0))]
fn usemem(
    size: usize,
    random: bool,
    repeats: u64,
    runtime_s: f64,
    start_at_ns: u64,
) -> PyResult<String> {
    if repeats == 0 && runtime_s <= 0.0 {
        return Err(PyValueError::new_err("repeats = 0 needs a runtime_s limit"));
    }
    if start_at_ns > monotonic_ns() + MAX_START_LEAD_NS {
        return Err(PyValueError::new_err(format!(
            "start_at_ns {start_at_ns} is more than a minute ahead of CLOCK_MONOTONIC"
        )));
    }
    sleep_until(start_at_ns);
    let start_ns = monotonic_ns();
    let map = Mapping::anon(size)?;
    let words = map.words();
    let m = (size / 8) as u64;
    let deadline = (runtime_s > 0.0).then(|| Instant::now() + Duration::from_secs_f64(runtime_s));
    let mut rng = Rng::seeded();
    let start = Instant::now();
    let mut accessed: u64 = 0;
    let mut passes: u64 = 0;
    // Each access's latency, as the simulator's usemem records it: a page of a sequential
    // pass (its 512 words), a word of a random one; one clock read per access.
    let mut latency = Histogram::default();
    let mut last = monotonic_ns();
    let words_per_access: u64 = if random { 1 } else { (PAGE / 8) as u64 };
    'outer: while repeats == 0 || passes < repeats {
        for i in 0..m {
            if i % words_per_access == 0 && (i > 0 || passes > 0) {
                let now = monotonic_ns();
                latency.record(now - last);
                last = now;
            }
            let idx = if random { rng.below(m) } else { i };
            // SAFETY: idx < m = size/8, inside the mapping.
            unsafe {
                let p = words.add(idx as usize);
                if passes > 0 && !random && std::ptr::read_volatile(p) != idx {
                    return Err(PyOSError::new_err(format!(
                        "word {idx} lost its value between passes (memory corruption?)"
                    )));
                }
                std::ptr::write_volatile(p, idx);
            }
            accessed += 1;
            if accessed.is_multiple_of(65536) {
                if let Some(d) = deadline {
                    if Instant::now() >= d {
                        break 'outer;
                    }
                }
            }
        }
        passes += 1;
    }
    let usecs = start.elapsed().as_micros().max(1) as u64;
    let bytes = m + 8 * accessed;
    let free_start = Instant::now();
    drop(map);
    let free_usecs = free_start.elapsed().as_micros() as u64;
    Ok(json!({
        "bytes": bytes,
        "usecs": usecs,
        "kb_s": ((bytes as u128 * 1_000_000) >> 10) as u64 / usecs,
        "passes": passes,
        "words": accessed,
        "free_usecs": free_usecs,
        "start_ns": start_ns,
        "latency_sum_ns": latency.sum_ns() as u64,
        "latency_hist": latency.buckets().collect::<Vec<_>>(),
    })
    .to_string())
}

/// A live usemem's `latency_us` metrics (JSON text), as the simulated usemem's: its tasks'
/// `latency_hist` buckets added up, whose samples sum to `sum_ns`.
#[pyfunction]
fn usemem_latency_us(buckets: Vec<(u64, u64)>, sum_ns: u128) -> String {
    serde_json::Value::from(Histogram::from_buckets(buckets, sum_ns).latency_us()).to_string()
}

/// stress-highalloc's attempts a pass (`HIGHALLOC_COUNT`), as the simulated workload's.
#[pyfunction]
fn highalloc_count(memtotal_bytes: u64, hpage_bytes: u64, percent: u64) -> u64 {
    reclaim_sim::workload::stress_highalloc::highalloc_count(memtotal_bytes, hpage_bytes, percent)
}

/// stress-highalloc's time between attempts in seconds (`MS_DELAY`) for 2 MiB pages.
#[pyfunction]
fn highalloc_interval_s(mb_per_sec: f64) -> f64 {
    use reclaim_sim::workload::stress_highalloc::{attempt_interval_ns, HPAGE_BYTES};
    attempt_interval_ns(HPAGE_BYTES, mb_per_sec) as f64 / 1e9
}

/// A live stress-highalloc's metrics (JSON text) from its passes — (name, [(success,
/// latency ms)]) — by the simulated workload's code.
#[pyfunction]
fn highalloc_metrics(passes: Vec<(String, Vec<(bool, f64)>)>, numpages: u64) -> String {
    use reclaim_sim::workload::stress_highalloc::{pass_metrics, Pass};
    let passes: Vec<Pass> = passes
        .into_iter()
        .map(|(name, attempts)| Pass {
            name,
            attempts: attempts
                .into_iter()
                .map(|(ok, ms)| (ok, (ms * 1e6).round().max(0.0) as u64))
                .collect(),
        })
        .collect();
    serde_json::Value::from(pass_metrics(&passes, numpages)).to_string()
}

/// How far ahead a start time may be: a mistaken clock (CLOCK_REALTIME) would sleep for
/// decades.
const MAX_START_LEAD_NS: u64 = 60_000_000_000;

/// Sleep until CLOCK_MONOTONIC reads `t_ns` (at once if it already has).
fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is a valid timespec; a signal (EINTR) retries until the time has come.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `clock_gettime(clock)` in ns.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// mmtests stutter's latency probe (stutter-bench @501fd3d1^): every loop sleep 5 ms, map
/// `pages` anonymous pages, write one word in each, unmap. latency = now − previous − 5 ms
/// (clamped at 0, so it includes oversleep). Latencies under 5 ms are averaged in batches of
/// 1000 and printed as `"<count> <avg_ns>"`; a latency ≥ 5 ms flushes the batch and prints
/// `"1 <ns>"`. Runs for `duration_s` or until SIGINT, then flushes the partial batch; lines are
/// flushed as written so even a SIGKILL loses only the batch in progress.
#[pyfunction]
#[pyo3(signature = (duration_s, pages=32768))]
fn mmap_latency_probe(py: Python<'_>, duration_s: f64, pages: usize) -> PyResult<u64> {
    const DELAY_NS: u64 = 5_000_000;
    const BATCH: u64 = 1000;
    let end = Instant::now() + Duration::from_secs_f64(duration_s);
    let mut out = std::io::stdout().lock();
    let (mut count, mut sum) = (0u64, 0u64);
    let mut loops = 0u64;
    let mut prev = monotonic_ns();
    let flush = |out: &mut std::io::StdoutLock, count: &mut u64, sum: &mut u64| -> PyResult<()> {
        if let Some(avg) = sum.checked_div(*count) {
            writeln!(out, "{count} {avg}").and_then(|_| out.flush())?;
            (*count, *sum) = (0, 0);
        }
        Ok(())
    };
    // SIGINT (Python's handler sets a flag) ends the probe cleanly.
    while Instant::now() < end && py.check_signals().is_ok() {
        std::thread::sleep(Duration::from_nanos(DELAY_NS));
        let map = Mapping::anon(pages * PAGE)?;
        for i in 0..pages {
            // SAFETY: one word at the start of each page of the mapping.
            unsafe { std::ptr::write_volatile(map.addr.add(i * PAGE) as *mut u64, i as u64) };
        }
        drop(map);
        let now = monotonic_ns();
        let latency = (now - prev).saturating_sub(DELAY_NS);
        prev = now;
        loops += 1;
        if latency >= DELAY_NS {
            flush(&mut out, &mut count, &mut sum)?;
            writeln!(out, "1 {latency}").and_then(|_| out.flush())?;
        } else {
            count += 1;
            sum += latency;
            if count == BATCH {
                flush(&mut out, &mut count, &mut sum)?;
            }
        }
    }
    flush(&mut out, &mut count, &mut sum)?;
    Ok(loops)
}

/// mmtests stutter's memhog: map `size` bytes of anonymous memory, write one word per page,
/// print `ready`, then hold the memory for `hold_s` seconds (the harness kills it earlier).
#[pyfunction]
fn memhog(size: usize, hold_s: f64) -> PyResult<()> {
    let map = Mapping::anon(size)?;
    for off in (0..size).step_by(PAGE) {
        // SAFETY: off < size, inside the mapping.
        unsafe { std::ptr::write_volatile(map.addr.add(off) as *mut u64, off as u64) };
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").and_then(|_| out.flush())?;
    std::thread::sleep(Duration::from_secs_f64(hold_s));
    Ok(())
}

/// mmtests micro/mapped-file-stream.c (Johannes Weiner, 2010): create `path`, unlink it,
/// make it sparse with ftruncate(`nr_bytes`), map it MAP_SHARED, madvise(MADV_RANDOM) to turn
/// off fault readahead, and read one byte per page with a volatile read. Every hole fault adds a
/// zero-filled page-cache page that is mapped once and never touched again.
///
/// With `write`, mmtests' micro/vmscan-file-mmap-write instead: `usemem -f FILE -j 4096`,
/// which maps the sparse file MAP_SHARED without advice and stores one word per page (its
/// word index, as usemem's `p[idx] = idx`), once: a stream of dirty mapped file pages. The
/// file is unlinked, so its pages still dirty when the mapping and file close are truncated,
/// not written.
#[pyfunction]
#[pyo3(signature = (path, nr_bytes, write = false))]
fn mapped_file_stream(path: &str, nr_bytes: usize, write: bool) -> PyResult<String> {
    let cpath = std::ffi::CString::new(path).map_err(|e| PyValueError::new_err(e.to_string()))?;
    // SAFETY: plain syscalls on a path we own; fd is closed below.
    let fd = unsafe {
        libc::open(
            cpath.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
            0o600,
        )
    };
    if fd < 0 {
        return Err(PyOSError::new_err(format!(
            "cannot create {path}: {}",
            std::io::Error::last_os_error()
        )));
    }
    let result = (|| {
        // SAFETY: fd is a valid open file.
        if unsafe { libc::unlink(cpath.as_ptr()) } != 0
            || unsafe { libc::ftruncate(fd, nr_bytes as libc::off_t) } != 0
        {
            return Err(PyOSError::new_err(
                std::io::Error::last_os_error().to_string(),
            ));
        }
        let map = Mapping::map(nr_bytes, libc::MAP_SHARED, fd)?;
        if !write {
            // SAFETY: advice on our own mapping.
            unsafe { libc::madvise(map.addr as *mut libc::c_void, nr_bytes, libc::MADV_RANDOM) };
        }
        let start = Instant::now();
        let mut sum: u64 = 0;
        for off in (0..nr_bytes).step_by(PAGE) {
            if write {
                let idx = off / std::mem::size_of::<u64>();
                // SAFETY: off < nr_bytes, page-aligned inside the mapping.
                unsafe { std::ptr::write_volatile(map.addr.add(off) as *mut u64, idx as u64) };
            } else {
                // SAFETY: off < nr_bytes, inside the mapping.
                sum =
                    sum.wrapping_add(unsafe { std::ptr::read_volatile(map.addr.add(off)) } as u64);
            }
        }
        Ok(json!({
            "pages": nr_bytes.div_ceil(PAGE),
            "usecs": start.elapsed().as_micros() as u64,
            "checksum": sum,
        })
        .to_string())
    })();
    // SAFETY: fd was opened above.
    unsafe { libc::close(fd) };
    result
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let live = PyModule::new(m.py(), "live")?;
    live.add_function(wrap_pyfunction!(usemem, &live)?)?;
    live.add_function(wrap_pyfunction!(usemem_latency_us, &live)?)?;
    live.add_function(wrap_pyfunction!(highalloc_count, &live)?)?;
    live.add_function(wrap_pyfunction!(highalloc_interval_s, &live)?)?;
    live.add_function(wrap_pyfunction!(highalloc_metrics, &live)?)?;
    live.add_function(wrap_pyfunction!(mmap_latency_probe, &live)?)?;
    live.add_function(wrap_pyfunction!(memhog, &live)?)?;
    live.add_function(wrap_pyfunction!(mapped_file_stream, &live)?)?;
    m.add_submodule(&live)?;
    Ok(())
}
