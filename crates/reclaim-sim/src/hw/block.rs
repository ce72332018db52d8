//! Block devices as queues, and the I/Os (`Bio`) submitted to them.
//!
//! A device is a FIFO transfer stage at the device's bandwidth, then a completion latency
//! (fixed, or drawn about its mean) that overlaps other requests' transfers (an NVMe drive's
//! internal parallelism); writes may have a latency of their own (a drive's write cache).
//! One stream sees `latency + request + size/bandwidth` per request (`request`: below);
//! enough concurrent streams keep the transfer stage busy and the device saturates at its
//! bandwidth (seed 000, Test 1). Transfer times vary from request to request (`jitter`: the
//! fraction of a transfer drawn from an exponential distribution with the same mean), so
//! that queues form before saturation as on
//! a real drive and throughput bends towards the bandwidth rather than hitting it (seed 000,
//! Test 2). An I/O's completion latency may vary too (`latency_jitter`, the same rule
//! applied to the latency, reads and writes alike: a flash read's time is not a constant,
//! for error correction, retries, the die's state), so that I/Os submitted together
//! complete in another order. As with the transfer, one draw serves all the parts of an
//! I/O; a real I/O would wait for its slowest part. Each request may also cost the transfer
//! stage a fixed time (`request_ns`: command processing, which bounds IOPS), and a device
//! takes at most `queue_depth` requests at once: a request beyond that waits in the block
//! layer for the first to complete. Counters follow /proc/diskstats, reads and writes apart.
//!
//! Segments (`segment_ns`): the transfer stage may also spend a fixed time on each segment of
//! an I/O, a run of physically contiguous memory (`blk_rq_map_sg()` makes one scatter-gather
//! entry of each such run; `bvec_try_merge_page()` merges a page into the run before it).
//! On a VM's virtio disk each entry is a descriptor the host handles apart: on the
//! Firecracker VM of docs/fidelity/host.md a 512 KiB O_DIRECT read into 4 KiB user pages
//! (128 segments) took 0.65 ms and the same read into a huge page (one segment) 0.35 ms.
//! So an O_DIRECT reader (a segment per 4 KiB page of its buffer) and a buffered one (whose
//! readahead fills contiguous page-cache memory: few segments) see different bandwidths
//! from one device. The submitter counts the segments (`Kernel::submit_bio`); 0 by default,
//! when nothing is charged.
//!
//! An I/O is submitted whole (its requests are the parts of at most `max_request_bytes`) and
//! completes when its last part does. Its completion is an event
//! (`process::Sim::complete_io`) that runs the tasks waiting for it. The event is queued
//! when the I/O gets its first waiter (`process::wait_on_bio`): a read that its reader finds
//! complete, with no work to do at completion, costs no event.
//!
//! A flash drive's dies may be modelled too (`dies`, `program_us`): the data a write brings
//! into the drive's cache is programmed onto the dies in turn, each program holding its die
//! for `program_us`, and a read whose die is programming waits for that program to end
//! before its own latency (no program suspend; programs queued behind it on the die wait
//! for the read, as a controller serves reads first). A program holds `program_us` of the
//! write bandwidth's data per die, so that all dies programming together program at the
//! drive's write bandwidth: a die programs for the fraction of the time the drive writes
//! at its bandwidth, and a read that comes at a time unrelated to the writes waits, on
//! average, that fraction of half a program. Departures: one program time (an MLC die
//! alternates faster lower and slower upper pages, which lengthens the mean wait); a read
//! does not hold its die, nor do erases or garbage collection; the die is drawn at random,
//! not where the data was written; one die serves a whole I/O.
//!
//! A rotational device with a seek (or any with `elevator = "deadline"`) has the deadline
//! I/O scheduler in front of each of its disks instead of the FIFO transfer stage
//! (hw/elevator.rs): its requests are sorted and merged, each disk serves one at a time,
//! and a seek's cost depends on its distance. Its I/Os' completions can move later as new
//! requests are sorted ahead of them (`BlockLayer::submit_bio`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use crate::engine::{Ns, NSEC_PER_SEC};
use crate::hw::elevator::{Deadline, Seek, NR_REQUESTS};
use crate::machine::Device;
use crate::sched::WaitQueue;

/// BLK_RW_ASYNC and BLK_RW_SYNC (include/linux/backing-dev.h, 2.6.36): the two directions
/// a queue counts its requests in, and a bdi's congestion in. Reads and `REQ_SYNC` writes
/// are sync; writeback's and reclaim's writes are async.
pub const BLK_RW_ASYNC: usize = 0;
pub const BLK_RW_SYNC: usize = 1;

/// `blk_queue_congestion_threshold()` (block/blk-core.c, 2.6.36): the request counts at
/// which a queue of `nr_requests` becomes congested (`nr_congestion_on`,
/// `nr_requests - nr_requests/8 + 1`, at most `nr_requests`) and stops being so
/// (`nr_congestion_off`, `nr_requests - nr_requests/8 - nr_requests/16 - 1`, at least 1):
/// 113 and 103 for the default 128.
pub fn blk_queue_congestion_threshold(nr_requests: u32) -> (u32, u32) {
    let nr = i64::from(nr_requests);
    let on = (nr - nr / 8 + 1).min(nr);
    let off = (nr - nr / 8 - nr / 16 - 1).max(1);
    (on as u32, off as u32)
}

/// A queue's `struct request_list` as 2.6.36's block/blk-core.c counts it: the requests
/// allocated in each direction (`rl->count[sync]`, from `get_request()` until
/// `__freed_request()` when the request completes), against the queue's congestion
/// thresholds. Counted only while a kernel variant waits on congestion
/// (`variant.reclaim_wait`), and then only in the async direction, on the writes whose
/// completion is an event (writeback, reclaim's and swap's writes; mm/congestion.rs).
///
/// Departures: a write counts `ceil(bytes / max_request_bytes)` requests from its
/// submission to its completion, where the kernel's elevator can merge a write into a
/// request already queued (no new request) and frees each request as it completes; no
/// submitter sleeps in `get_request_wait()` at `nr_requests` on a device without an
/// elevator (its requests wait in the block layer, `hw::block`), so the count can pass
/// `nr_requests` there.
#[derive(Clone, Debug)]
pub struct RequestList {
    pub count: [u32; 2],
    pub nr_congestion_on: u32,
    pub nr_congestion_off: u32,
}

impl RequestList {
    /// The list of a queue of `nr_requests`.
    pub fn new(nr_requests: u32) -> RequestList {
        let (nr_congestion_on, nr_congestion_off) = blk_queue_congestion_threshold(nr_requests);
        RequestList {
            count: [0; 2],
            nr_congestion_on,
            nr_congestion_off,
        }
    }

    /// `get_request()` of `n` requests in direction `sync`: whether the queue is congested
    /// by them (`rl->count[sync] + 1 >= queue_congestion_on_threshold(q)` before one of
    /// them is counted: `blk_set_queue_congested()`).
    pub fn get_request(&mut self, sync: usize, n: u32) -> bool {
        let congested = self.count[sync] + n >= self.nr_congestion_on;
        self.count[sync] += n;
        congested
    }

    /// `__freed_request()` of `n` requests in direction `sync`: whether the count is then
    /// below the off threshold (`blk_clear_queue_congested()`, called at every request
    /// freed below it, congested or not).
    pub fn freed_request(&mut self, sync: usize, n: u32) -> bool {
        debug_assert!(self.count[sync] >= n, "more requests freed than allocated");
        self.count[sync] -= n;
        self.count[sync] < self.nr_congestion_off
    }
}

/// The direction of an I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// The block layer: the machine's devices and the I/Os in flight on them.
pub struct BlockLayer {
    pub devices: Vec<BlockDevice>,
    pub bios: Bios,
}

impl BlockLayer {
    /// The devices of `[machine] devices`, `count` of each, named `<name><i>n1`, each with
    /// its own generator seeded from `seed`.
    pub fn new(machine_devices: &[Device], seed: u64) -> BlockLayer {
        let mut devices = Vec::new();
        for d in machine_devices {
            for i in 0..d.count {
                let seed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ devices.len() as u64;
                devices.push(BlockDevice::new(format!("{}{}n1", d.name, i), d, seed));
            }
        }
        BlockLayer {
            devices,
            bios: Bios::default(),
        }
    }

    /// `submit_bio()` of I/O `bio` of `bytes` at `now`, at byte `offset` of its device if
    /// known (else where the device's last I/O ended, a file read taken as sequential),
    /// in `segments` scatter-gather segments: sets when it completes. Behind an elevator,
    /// also moves later the completions of the I/Os queued that the new one's requests
    /// are sorted ahead of.
    pub fn submit_bio(
        &mut self,
        bio: u32,
        now: Ns,
        bytes: u64,
        offset: Option<u64>,
        segments: u64,
    ) {
        let (dev, op) = (self.bios[bio].dev, self.bios[bio].op);
        let d = &mut self.devices[dev];
        if d.elv.is_some() {
            d.submit_elv(bio, op, now, bytes, offset, segments, &mut self.bios);
            return;
        }
        self.bios[bio].done_at = match offset {
            Some(offset) => d.submit_sg_at(op, now, bytes, offset, segments),
            None => d.submit_sg(op, now, bytes, segments),
        };
    }

    /// Bring the devices' counters up to `now` (the requests an elevator's disks have
    /// started by then are dispatched and counted).
    pub fn sync(&mut self, now: Ns) {
        for d in &mut self.devices {
            if d.elv.is_some() {
                d.elv_commit(now);
            }
        }
    }

    /// `get_request_wait()`: when a submitter to a device with an elevator whose queue is
    /// full (`nr_requests` on one of its disks) can go on, if one is full at `now`.
    pub fn request_wait(&mut self, now: Ns) -> Option<Ns> {
        self.devices
            .iter_mut()
            .filter(|d| d.elv.is_some())
            .find_map(|d| d.tags_full(now))
    }
}

/// A device's deadline queues, one a disk (a RAID-0's members each have their own), and
/// the seek's shape.
#[derive(Clone, Debug)]
struct Elv {
    disks: Vec<Deadline>,
    seek: Seek,
}

#[derive(Clone, Debug)]
pub struct BlockDevice {
    pub name: String,
    /// Bytes per nanosecond, reading and writing.
    read_bandwidth: f64,
    write_bandwidth: f64,
    latency: Ns,
    write_latency: Ns,
    pub max_request_bytes: u64,
    request_ns: Ns,
    segment_ns: Ns,
    seek_ns: Ns,
    /// Where the last request with a known offset ended (bytes).
    head: u64,
    queue_depth: u32,
    transfer_free_at: Ns,
    /// Completion times and request counts of the I/Os in flight, the first to complete on
    /// top (in submission order, unless reads and writes have different latencies or the
    /// latency varies).
    in_flight: BinaryHeap<Reverse<(Ns, u32)>>,
    nr_in_flight: u32,
    jitter: f64,
    latency_jitter: f64,
    /// When each flash die is free of the programs queued on it (empty: no die model).
    die_free_at: Vec<Ns>,
    program_ns: Ns,
    /// Bytes one program writes: `program_ns` of the write bandwidth per die.
    program_bytes: f64,
    /// Written bytes not yet making up a whole program.
    unprogrammed: f64,
    /// The die the next program goes to.
    next_die: usize,
    rng: Pcg64Mcg,
    /// A RAID-0's members (`raid0_disks`), if it is one.
    raid0: Option<Box<Raid0>>,
    /// The deadline elevator's queues, if the device has one (hw/elevator.rs).
    elv: Option<Box<Elv>>,
    /// The queue's request counts and congestion thresholds (`q->rq`, 2.6.36).
    pub rl: RequestList,
    pub stats: DiskStats,
}

/// A RAID-0 (md raid0): `stripe` bytes to a member, the members in turn, each disk with its
/// own transfer stage and head. Offsets are the array's.
#[derive(Clone, Debug)]
struct Raid0 {
    stripe: u64,
    members: Vec<Member>,
}

/// One member disk of a RAID-0: when its transfer stage frees, and where its last request
/// ended (its own offsets).
#[derive(Clone, Copy, Debug, Default)]
struct Member {
    free_at: Ns,
    head: u64,
}

impl Raid0 {
    /// The member and its offset of array byte `offset`.
    fn map(&self, offset: u64) -> (usize, u64) {
        let n = self.members.len() as u64;
        let chunk = offset / self.stripe;
        let member = (chunk % n) as usize;
        (member, (chunk / n) * self.stripe + offset % self.stripe)
    }

    /// The bytes of `bytes` at array `offset` each member takes, and where on it they start
    /// (consecutive stripes on one member are adjacent there, so an I/O is one run per
    /// member), into `runs` (member index → `(offset, bytes)`, 0 bytes: untouched).
    fn split(&self, offset: u64, bytes: u64, runs: &mut [(u64, u64)]) {
        runs.fill((0, 0));
        let (mut at, end) = (offset, offset + bytes);
        while at < end {
            let (m, moff) = self.map(at);
            let len = (self.stripe - at % self.stripe).min(end - at);
            if runs[m].1 == 0 {
                runs[m].0 = moff;
            }
            runs[m].1 += len;
            at += len;
        }
    }
}

/// Cumulative counters, as the fields of /proc/diskstats.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskStats {
    pub rd_ios: u64,
    pub rd_bytes: u64,
    /// Σ per-request time from submission to completion (rd_ticks, in ns).
    pub rd_ticks_ns: u64,
    pub wr_ios: u64,
    pub wr_bytes: u64,
    pub wr_ticks_ns: u64,
    /// Time the transfer stage was busy (io_ticks).
    pub busy_ns: u64,
    /// Flash dies (none on a device without them): reads that found their die programming,
    /// their Σ wait for the program, and the Σ time programs held dies (counted when each
    /// program is queued).
    pub die_busy_reads: u64,
    pub die_wait_ns: u64,
    pub program_ns: u64,
}

impl BlockDevice {
    /// One device of `[[machine.devices]]` (`p.count` is `BlockLayer::new`'s).
    pub fn new(name: String, p: &Device, seed: u64) -> BlockDevice {
        let per_ns = |mb_s: f64| mb_s * 1e6 / NSEC_PER_SEC as f64;
        BlockDevice {
            name,
            read_bandwidth: per_ns(p.bandwidth_mb_s),
            write_bandwidth: per_ns(p.write_mb_s()),
            latency: (p.latency_us * 1e3) as Ns,
            write_latency: (p.write_latency_us.unwrap_or(p.latency_us) * 1e3) as Ns,
            max_request_bytes: p.max_request_kb * 1024,
            request_ns: (p.request_us * 1e3) as Ns,
            segment_ns: (p.segment_us * 1e3) as Ns,
            seek_ns: (p.seek_us * 1e3) as Ns,
            head: 0,
            queue_depth: p.queue_depth,
            transfer_free_at: 0,
            in_flight: BinaryHeap::new(),
            nr_in_flight: 0,
            jitter: p.jitter,
            latency_jitter: p.latency_jitter,
            die_free_at: vec![0; p.dies as usize],
            program_ns: (p.program_us * 1e3) as Ns,
            program_bytes: p.program_bytes(),
            unprogrammed: 0.0,
            next_die: 0,
            rng: Pcg64Mcg::seed_from_u64(seed),
            elv: p.has_elevator().then(|| {
                Box::new(Elv {
                    disks: vec![Deadline::default(); p.raid0_disks.unwrap_or(1) as usize],
                    seek: Seek {
                        seek_ns: (p.seek_us * 1e3) as Ns,
                        span: (p.seek_span_mb * 1e6) as u64,
                        media_bytes_per_ns: per_ns(p.bandwidth_mb_s),
                    },
                })
            }),
            raid0: p.raid0_disks.map(|n| {
                Box::new(Raid0 {
                    stripe: p.stripe_kb.unwrap_or(512) * 1024,
                    members: vec![Member::default(); n as usize],
                })
            }),
            rl: RequestList::new(NR_REQUESTS as u32),
            stats: DiskStats::default(),
        }
    }

    /// The requests (`max_request_bytes` each at most) an I/O of `bytes` takes.
    pub fn nr_requests(&self, bytes: u64) -> u32 {
        bytes.div_ceil(self.max_request_bytes).max(1) as u32
    }

    /// Whether the device is a RAID-0, and of how many members.
    pub fn raid0_disks(&self) -> Option<usize> {
        self.raid0.as_ref().map(|r| r.members.len())
    }

    /// The block layer's tags at `now`: whether all `queue_depth` are in use, and if so when
    /// the first request in flight completes (a submitter sleeps in `blk_mq_get_tag` until then).
    /// Behind an elevator: whether one of its disks has `nr_requests` queued, and if so
    /// when the first of them ends (`get_request_wait()`).
    pub fn tags_full(&mut self, now: Ns) -> Option<Ns> {
        if self.elv.is_some() {
            self.elv_commit(now);
            let elv = self.elv.as_ref().expect("an elevator");
            return elv
                .disks
                .iter()
                .filter(|d| d.nr_queued() >= NR_REQUESTS)
                .filter_map(|d| d.first_done())
                .min();
        }
        if self.queue_depth == 0 {
            return None;
        }
        while let Some(&Reverse((done, n))) = self.in_flight.peek() {
            if done > now {
                break;
            }
            self.in_flight.pop();
            self.nr_in_flight -= n;
        }
        (self.nr_in_flight >= self.queue_depth).then(|| {
            self.in_flight
                .peek()
                .map_or(now, |&Reverse((done, _))| done)
        })
    }

    /// Submit an I/O of `bytes` at byte `offset` of the device at `now`: as `submit`, plus a
    /// seek when the device has a seek time and the I/O does not start where the last one
    /// with an offset ended.
    pub fn submit_at(&mut self, op: Op, now: Ns, bytes: u64, offset: u64) -> Ns {
        self.submit_sg_at(op, now, bytes, offset, 0)
    }

    /// `submit_at` of an I/O of `segments` scatter-gather segments.
    pub fn submit_sg_at(&mut self, op: Op, now: Ns, bytes: u64, offset: u64, segments: u64) -> Ns {
        if self.raid0.is_some() {
            return self.transfer_raid0(op, now, bytes, offset, segments);
        }
        let seek = if self.seek_ns > 0 && offset != self.head {
            self.seek_ns
        } else {
            0
        };
        self.head = offset + bytes;
        self.transfer(op, now, bytes, seek, segments)
    }

    /// Submit an I/O of `bytes` at `now` (split into max-size requests submitted together);
    /// returns when the last part completes.
    pub fn submit(&mut self, op: Op, now: Ns, bytes: u64) -> Ns {
        if self.raid0.is_some() {
            return self.transfer_raid0(op, now, bytes, self.head, 0);
        }
        self.transfer(op, now, bytes, 0, 0)
    }

    /// `submit` of an I/O of `segments` scatter-gather segments, each costing the transfer
    /// stage `segment_ns`.
    pub fn submit_sg(&mut self, op: Op, now: Ns, bytes: u64, segments: u64) -> Ns {
        if self.raid0.is_some() {
            // No offset (a file read, taken as sequential): where the last I/O ended.
            return self.transfer_raid0(op, now, bytes, self.head, segments);
        }
        self.transfer(op, now, bytes, 0, segments)
    }

    /// Whether segments cost this device anything (the submitter need not count them if not).
    pub fn charges_segments(&self) -> bool {
        self.segment_ns > 0
    }

    /// When `parts` more requests, ready at `start`, can enter the queue: requests that
    /// completed by `now` leave it, and beyond the queue depth each waits for the first in
    /// flight to complete.
    fn wait_for_queue(&mut self, now: Ns, parts: u64, mut start: Ns) -> Ns {
        while let Some(&Reverse((done, n))) = self.in_flight.peek() {
            let full =
                self.queue_depth > 0 && self.nr_in_flight as u64 + parts > self.queue_depth as u64;
            if done > now && !full {
                break;
            }
            start = start.max(done);
            self.in_flight.pop();
            self.nr_in_flight -= n;
        }
        start
    }

    /// The bandwidth and completion latency of `op`.
    fn rate(&self, op: Op) -> (f64, Ns) {
        match op {
            Op::Read => (self.read_bandwidth, self.latency),
            Op::Write => (self.write_bandwidth, self.write_latency),
        }
    }

    #[inline(always)]
    fn transfer(&mut self, op: Op, now: Ns, bytes: u64, seek: Ns, segments: u64) -> Ns {
        let parts = bytes.div_ceil(self.max_request_bytes).max(1);
        let start = self.wait_for_queue(now, parts, self.transfer_free_at.max(now));
        let (bandwidth, latency) = self.rate(op);
        let mean = bytes as f64 / bandwidth;
        let transfer = self.vary(mean, self.jitter) as Ns
            + parts * self.request_ns
            + segments * self.segment_ns
            + seek;
        self.transfer_free_at = start + transfer;
        // Drawn after the transfer's, and only when asked for: devices without it draw
        // the same sequence as before it existed.
        let latency = self.vary(latency as f64, self.latency_jitter) as Ns;
        let arrived = self.transfer_free_at;
        let done = match op {
            Op::Read => self.die_ready(arrived),
            Op::Write => {
                self.program(arrived, bytes);
                arrived
            }
        } + latency;
        self.account(op, now, done, parts, bytes, transfer);
        done
    }

    /// An I/O of `parts` requests and `bytes` submitted at `now` and done at `done`, its
    /// transfer stage busy `busy`: /proc/diskstats' counts, and the requests in flight
    /// until `done` when the device has a queue depth.
    fn account(&mut self, op: Op, now: Ns, done: Ns, parts: u64, bytes: u64, busy: Ns) {
        let s = &mut self.stats;
        let (ios, bytes_done, ticks) = match op {
            Op::Read => (&mut s.rd_ios, &mut s.rd_bytes, &mut s.rd_ticks_ns),
            Op::Write => (&mut s.wr_ios, &mut s.wr_bytes, &mut s.wr_ticks_ns),
        };
        *ios += parts;
        *bytes_done += bytes;
        *ticks += (done - now) * parts;
        s.busy_ns += busy;
        if self.queue_depth > 0 {
            self.in_flight.push(Reverse((done, parts as u32)));
            self.nr_in_flight += parts as u32;
        }
    }
}

impl BlockDevice {
    /// A RAID-0's I/O of `bytes` at array byte `offset`: split by stripe, each member's run
    /// (one request per `max_request_bytes` of it) queued on that member's transfer stage
    /// with a seek if it does not start where the member's last request ended; the I/O
    /// completes when its last member's part does, plus one completion latency. The
    /// array's queue depth, jitter and latency apply to the I/O as on one disk; segments
    /// are charged to the members in proportion to their bytes. Counters: one I/O per
    /// member request; `busy_ns` the longest member's transfer (the array is busy while
    /// any member is, and its members work in parallel).
    // Out of line: the common devices' path (`transfer`, inlined into the submitters) must
    // not grow by it (the dd bench's instruction count).
    #[cold]
    #[inline(never)]
    fn transfer_raid0(&mut self, op: Op, now: Ns, bytes: u64, offset: u64, segments: u64) -> Ns {
        let raid = self.raid0.as_mut().expect("a RAID-0");
        let mut runs = [(0u64, 0u64); crate::machine::MAX_RAID0_DISKS as usize];
        let runs = &mut runs[..raid.members.len()];
        raid.split(offset, bytes, runs);
        let parts: u64 = runs
            .iter()
            .map(|r| r.1.div_ceil(self.max_request_bytes))
            .sum::<u64>()
            .max(1);
        let start = self.wait_for_queue(now, parts, now);
        let (bandwidth, latency) = self.rate(op);
        let (mut arrived, mut longest) = (start, 0);
        for (m, &(moff, mbytes)) in runs.iter().enumerate() {
            if mbytes == 0 {
                continue;
            }
            let mean = mbytes as f64 / bandwidth;
            let transfer = self.vary(mean, self.jitter) as Ns;
            let raid = self.raid0.as_mut().expect("a RAID-0");
            let member = &mut raid.members[m];
            let seek = if self.seek_ns > 0 && moff != member.head {
                self.seek_ns
            } else {
                0
            };
            let transfer = transfer
                + mbytes.div_ceil(self.max_request_bytes) * self.request_ns
                + segments * mbytes / bytes.max(1) * self.segment_ns
                + seek;
            let begin = member.free_at.max(start);
            member.free_at = begin + transfer;
            member.head = moff + mbytes;
            arrived = arrived.max(member.free_at);
            longest = longest.max(transfer);
        }
        self.head = offset + bytes;
        self.transfer_free_at = self.transfer_free_at.max(arrived);
        let latency = self.vary(latency as f64, self.latency_jitter) as Ns;
        let done = arrived + latency;
        self.account(op, now, done, parts, bytes, longest);
        done
    }

    /// Dispatch the requests each disk of the elevator starts before `now`, and count
    /// them as /proc/diskstats does: an I/O per request (merged parts are one), its ticks
    /// from its first part's queueing to its end plus the device's completion latency;
    /// `busy_ns` the disks' service time over their number (on one disk, its busy time).
    fn elv_commit(&mut self, now: Ns) {
        let mut elv = self.elv.take().expect("an elevator");
        let stats = &mut self.stats;
        let n = elv.disks.len() as u64;
        let (rd_latency, wr_latency) = (self.latency, self.write_latency);
        for disk in &mut elv.disks {
            disk.commit(now, &elv.seek, self.request_ns, &mut |d| {
                let (ios, bytes, ticks, latency) = match d.op {
                    Op::Read => (
                        &mut stats.rd_ios,
                        &mut stats.rd_bytes,
                        &mut stats.rd_ticks_ns,
                        rd_latency,
                    ),
                    Op::Write => (
                        &mut stats.wr_ios,
                        &mut stats.wr_bytes,
                        &mut stats.wr_ticks_ns,
                        wr_latency,
                    ),
                };
                *ios += 1;
                *bytes += d.bytes;
                *ticks += d.done + latency - d.arrival;
                stats.busy_ns += d.service / n;
            });
        }
        self.elv = Some(elv);
    }

    /// An I/O through the elevator (`BlockLayer::submit_bio`): split by stripe on a RAID-0
    /// and into requests of at most `max_request_bytes` on each disk, each part's data
    /// time drawn (jitter) as it is queued, segments charged in proportion to bytes; one
    /// completion latency drawn for the I/O. Each disk touched dispatches what it started
    /// before `now`, queues the parts, and plans its queue; every I/O with a part queued
    /// there completes at the latest of its parts' planned ends plus its latency (never
    /// earlier than an earlier plan said).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn submit_elv(
        &mut self,
        bio: u32,
        op: Op,
        now: Ns,
        bytes: u64,
        offset: Option<u64>,
        segments: u64,
        bios: &mut Bios,
    ) {
        let offset = offset.unwrap_or(self.head);
        self.head = offset + bytes;
        let (bandwidth, latency) = match op {
            Op::Read => (self.read_bandwidth, self.latency),
            Op::Write => (self.write_bandwidth, self.write_latency),
        };
        let mut runs = [(0u64, 0u64); crate::machine::MAX_RAID0_DISKS as usize];
        let nr_disks = match &self.raid0 {
            Some(raid) => {
                let runs = &mut runs[..raid.members.len()];
                raid.split(offset, bytes, runs);
                runs.len()
            }
            None => {
                runs[0] = (offset, bytes);
                1
            }
        };
        self.elv_commit(now);
        let latency = self.vary(latency as f64, self.latency_jitter) as Ns;
        bios[bio].done_at = 0;
        bios[bio].latency = latency;
        let max = self.max_request_bytes;
        for (m, &(moff, mbytes)) in runs[..nr_disks].iter().enumerate() {
            if mbytes == 0 {
                continue;
            }
            let mut at = moff;
            while at < moff + mbytes {
                let len = (moff + mbytes - at).min(max);
                let xfer = self.vary(len as f64 / bandwidth, self.jitter) as Ns
                    + segments * len / bytes.max(1) * self.segment_ns;
                let elv = self.elv.as_mut().expect("an elevator");
                elv.disks[m].add(op, at, len, now, xfer, bio, max);
                at += len;
            }
            let elv = self.elv.as_mut().expect("an elevator");
            let disk = &mut elv.disks[m];
            disk.plan(&elv.seek, self.request_ns);
            for r in &disk.pending {
                for &b in &r.bios {
                    let b = &mut bios[b];
                    b.done_at = b.done_at.max(r.done + b.latency);
                }
            }
        }
    }

    /// When a read that reaches the dies at `now` can be served: at the end of the program
    /// in progress on its die, if any (those queued after it wait for the read). The die is
    /// drawn at random, as the drive's mapping scatters the slots' data over its dies (one
    /// die for the whole I/O, as one latency draw serves its parts). `now` without a die
    /// model.
    fn die_ready(&mut self, now: Ns) -> Ns {
        if self.die_free_at.is_empty() {
            return now;
        }
        let die = self.rng.gen_range(0..self.die_free_at.len());
        let free_at = self.die_free_at[die];
        if free_at <= now {
            return now;
        }
        // The die's programs run back to back until `free_at`, so the one in progress ends
        // at `now` plus the remainder of the time left modulo a program.
        let wait = (free_at - now - 1) % self.program_ns + 1;
        self.stats.die_busy_reads += 1;
        self.stats.die_wait_ns += wait;
        now + wait
    }

    /// The flash dies modelled (0: none).
    pub fn nr_dies(&self) -> usize {
        self.die_free_at.len()
    }

    /// Program the `bytes` a write brought into the drive's cache at `now` onto the dies, in
    /// turn, whole programs only (the rest waits for the next write).
    fn program(&mut self, now: Ns, bytes: u64) {
        if self.die_free_at.is_empty() || self.program_bytes <= 0.0 {
            return;
        }
        self.unprogrammed += bytes as f64;
        while self.unprogrammed >= self.program_bytes {
            self.unprogrammed -= self.program_bytes;
            let free_at = &mut self.die_free_at[self.next_die];
            *free_at = (*free_at).max(now) + self.program_ns;
            self.next_die = (self.next_die + 1) % self.die_free_at.len();
            self.stats.program_ns += self.program_ns;
        }
    }

    /// `mean` with the fraction `jitter` of it drawn from an exponential distribution of the
    /// same mean (no draw when `jitter` is 0).
    fn vary(&mut self, mean: f64, jitter: f64) -> f64 {
        if jitter > 0.0 {
            let exp = -(1.0 - self.rng.gen::<f64>()).ln();
            mean * ((1.0 - jitter) + jitter * exp)
        } else {
            mean
        }
    }
}

/// What a completing I/O does besides waking its waiters (`bio->bi_end_io`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndIo {
    /// Nothing: its submitter waits for it and puts it.
    None,
    /// `end_swap_bio_read()`: the folios of swap area `0` are uptodate and unlocked.
    SwapRead(usize),
    /// `end_swap_bio_write()`: the folios' writeback to swap area `0` ends.
    SwapWrite(usize),
    /// The end of page-cache writeback (`folio_end_writeback()`, mm/page_writeback.rs).
    Writeback,
}

/// One I/O in flight (`struct bio`): the device, the direction, the pages it moves, when it
/// completes, and the tasks waiting for it.
#[derive(Debug)]
pub struct Bio {
    pub dev: usize,
    pub op: Op,
    pub pages: Vec<u32>,
    /// Its completion's work; an I/O with one is put by its completion, not its submitter.
    pub end_io: EndIo,
    /// When the device completes it (set at submission; behind an elevator, moved later
    /// if requests are sorted ahead of its own).
    pub done_at: Ns,
    /// Its completion latency, drawn at submission (behind an elevator: added to its
    /// requests' ends).
    pub latency: Ns,
    /// Its completion event is queued (it has a waiter).
    pub endio_queued: bool,
    /// The async requests it holds in its device's request list until it completes
    /// (`RequestList`; 0 when none are counted).
    pub nr_requests: u32,
    pub waiters: WaitQueue,
}

impl Bio {
    /// Has it completed by `now`?
    #[inline]
    pub fn done(&self, now: Ns) -> bool {
        self.done_at <= now
    }
}

/// The I/Os, in slots reused once their owner puts them (`bio_put`), so that their page
/// vectors are allocated once.
#[derive(Debug, Default)]
pub struct Bios {
    slots: Vec<Bio>,
    free: Vec<u32>,
}

impl Bios {
    /// `bio_alloc()`: an empty I/O to device `dev`, not yet submitted.
    pub fn alloc(&mut self, dev: usize, op: Op) -> u32 {
        if let Some(id) = self.free.pop() {
            let b = &mut self.slots[id as usize];
            b.dev = dev;
            b.op = op;
            b.done_at = Ns::MAX;
            b.latency = 0;
            b.endio_queued = false;
            b.end_io = EndIo::None;
            b.nr_requests = 0;
            return id;
        }
        self.slots.push(Bio {
            dev,
            op,
            pages: Vec::new(),
            end_io: EndIo::None,
            done_at: Ns::MAX,
            latency: 0,
            endio_queued: false,
            nr_requests: 0,
            waiters: WaitQueue::default(),
        });
        (self.slots.len() - 1) as u32
    }

    /// `bio_put()`: the owner is done with I/O `id`, which must have completed by `now`.
    pub fn put(&mut self, id: u32, now: Ns) {
        let b = &mut self.slots[id as usize];
        assert!(b.done(now), "bio {id} put before it completed");
        debug_assert!(!b.waiters.is_active());
        b.pages.clear();
        self.free.push(id);
    }

    /// I/Os allocated and not yet put.
    pub fn nr_in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

impl std::ops::Index<u32> for Bios {
    type Output = Bio;
    fn index(&self, id: u32) -> &Bio {
        &self.slots[id as usize]
    }
}

impl std::ops::IndexMut<u32> for Bios {
    fn index_mut(&mut self, id: u32) -> &mut Bio {
        &mut self.slots[id as usize]
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_seek_is_paid_only_off_the_previous_request() {
        let p = Device {
            max_request_kb: 1024,
            seek_us: 8000.0,
            ..params(100.0, 0.0, 0.0)
        };
        let mut d = BlockDevice::new("sda".into(), &p, 1);
        let t0 = d.submit_at(Op::Write, 0, 4096, 0); // from 0: no seek
        let t1 = d.submit_at(Op::Write, 0, 4096, 4096); // contiguous
        let t2 = d.submit_at(Op::Write, 0, 4096, 1 << 30); // elsewhere: a seek
        let xfer = t0;
        assert_eq!(t1 - t0, xfer);
        assert_eq!(t2 - t1, xfer + 8_000_000);
    }

    use super::*;

    fn params(bandwidth_mb_s: f64, latency_us: f64, jitter: f64) -> Device {
        Device {
            bandwidth_mb_s,
            latency_us,
            max_request_kb: 4096,
            jitter,
            ..Device::default()
        }
    }

    #[test]
    fn one_stream_sees_latency_plus_transfer() {
        let mut d = BlockDevice::new("nvme0n1".into(), &params(4000.0, 100.0, 0.0), 1);
        let done = d.submit(Op::Read, 0, 4_000_000);
        assert_eq!(done, 1_000_000 + 100_000);
    }

    #[test]
    fn a_write_completes_after_its_own_latency_and_frees_its_tag_first() {
        let p = Device {
            write_latency_us: Some(20.0),
            queue_depth: 2,
            ..params(4000.0, 100.0, 0.0)
        };
        let mut d = BlockDevice::new("nvme0n1".into(), &p, 1);
        // 4 KB at 4 GB/s: 1 µs of transfer each, one after the other. The read, submitted
        // first, completes after the write.
        let read = d.submit(Op::Read, 0, 4_000);
        let write = d.submit(Op::Write, 0, 4_000);
        assert_eq!(read, 1_000 + 100_000);
        assert_eq!(write, 2_000 + 20_000);
        // Both tags are taken; the first to free is the write's.
        assert_eq!(d.tags_full(0), Some(write));
        // Once the write has completed, a tag is free; then the read's is the next.
        assert_eq!(d.tags_full(write), None);
        d.submit(Op::Read, write, 4_000);
        assert_eq!(d.tags_full(write), Some(read));
    }

    #[test]
    fn concurrent_streams_saturate_the_bandwidth() {
        let mut d = BlockDevice::new("nvme0n1".into(), &params(1000.0, 500.0, 0.0), 1);
        // Eight back-to-back 1 MB requests: the transfers serialise at 1 GB/s.
        let last = (0..8)
            .map(|_| d.submit(Op::Read, 0, 1_000_000))
            .max()
            .unwrap();
        assert_eq!(last, 8_000_000 + 500_000);
        assert_eq!(d.stats.rd_bytes, 8_000_000);
    }

    #[test]
    fn jitter_keeps_the_mean_and_repeats_with_the_seed() {
        let run = |seed| {
            let mut d = BlockDevice::new("nvme0n1".into(), &params(1000.0, 0.0, 1.0), seed);
            (0..20_000)
                .map(|_| d.submit(Op::Read, 0, 100_000))
                .max()
                .unwrap()
        };
        let total = run(7);
        assert_eq!(total, run(7));
        assert_ne!(total, run(8));
        let mean = total as f64 / 20_000.0;
        assert!((mean - 100_000.0).abs() < 3_000.0, "{mean}");
    }

    #[test]
    fn latency_jitter_keeps_the_mean_and_reorders_completions() {
        let p = Device {
            latency_jitter: 1.0,
            ..params(4000.0, 100.0, 0.0)
        };
        let run = |seed| {
            let mut d = BlockDevice::new("nvme0n1".into(), &p, seed);
            // 4 KB reads 1 µs apart: each completes its own latency after its transfer.
            (0..20_000u64)
                .map(|i| d.submit(Op::Read, i * 1_000, 4_000) - (i * 1_000 + 1_000))
                .collect::<Vec<Ns>>()
        };
        let latencies = run(7);
        assert_eq!(latencies, run(7));
        assert_ne!(latencies, run(8));
        let mean = latencies.iter().sum::<Ns>() as f64 / latencies.len() as f64;
        assert!((mean - 100_000.0).abs() < 3_000.0, "{mean}");
        // Exponential: about e^-1 of the requests take longer than the mean, and a later
        // request often completes before an earlier one.
        let above = latencies.iter().filter(|&&l| l > 100_000).count() as f64;
        assert!((above / 20_000.0 - (-1f64).exp()).abs() < 0.02, "{above}");
        assert!(latencies.windows(2).any(|w| w[1] + 1_000 < w[0]));
    }

    #[test]
    fn no_latency_jitter_draws_nothing() {
        // Without the key, the generator's draws are the transfers' alone, in order, as
        // before the key existed: scenarios that do not set it run as they did.
        let mut d = BlockDevice::new("nvme0n1".into(), &params(1000.0, 100.0, 1.0), 3);
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        for i in 0..100u64 {
            let now = i * 10_000_000; // far apart: no queueing
            let exp = -(1.0 - rng.gen::<f64>()).ln();
            let transfer = (4096.0 * exp) as Ns;
            assert_eq!(d.submit(Op::Read, now, 4096), now + transfer + 100_000);
        }
    }

    #[test]
    fn a_read_waits_for_its_die_to_finish_programming() {
        // 4 dies programming 8 ms each at 1000 MB/s of writes: 2 MB per program. Writes
        // at half the bandwidth keep each die busy half the time, and a read that finds its
        // die busy waits for the rest of the program: 2 ms on average (half of the half of
        // 8 ms), on top of its 100 µs.
        let p = Device {
            dies: 4,
            program_us: 8_000.0,
            ..params(1000.0, 100.0, 0.0)
        };
        let mut d = BlockDevice::new("nvme0n1".into(), &p, 5);
        let (mut waited, mut reads, mut busy) = (0u64, 0u64, 0u64);
        for i in 0..100_000u64 {
            // 100 KB written every 200 µs (500 MB/s: a program every 4 ms), and a 4 KB read
            // after each, at a time in the write's idle 100 µs that moves from one to the
            // next, so that the reads sample the programs' period evenly.
            let now = i * 200_000;
            d.submit(Op::Write, now, 100_000);
            let at = now + 100_000 + (i * 61_803) % 95_000;
            let done = d.submit(Op::Read, at, 4);
            let wait = done - (at + 4) - 100_000;
            busy += (wait > 0) as u64;
            waited += wait;
            reads += 1;
        }
        let mean = waited as f64 / reads as f64;
        assert!((mean - 2_000_000.0).abs() < 150_000.0, "{mean}");
        let busy = busy as f64 / reads as f64;
        assert!((busy - 0.5).abs() < 0.03, "{busy}");
        // The counters say the same: reads that found a program, their waits, and the dies'
        // time programming (half of 4 dies' 20 s).
        assert_eq!(d.stats.die_busy_reads as f64, (busy * reads as f64).round());
        assert_eq!(d.stats.die_wait_ns, waited);
        assert_eq!(d.stats.program_ns, 5_000 * 8_000_000);
        // Without dies, no read waits.
        let mut plain = BlockDevice::new("nvme1n1".into(), &params(1000.0, 100.0, 0.0), 5);
        plain.submit(Op::Write, 0, 1_000_000);
        assert_eq!(plain.submit(Op::Read, 0, 4_096), 1_004_096 + 100_000);
    }

    #[test]
    fn a_read_waits_for_the_program_in_progress_not_those_queued_behind_it() {
        // One die, 1 ms programs of 1 MB at 1000 MB/s: a 3 MB write, transferred in 3 ms,
        // queues three programs on the die from its arrival, back to back until 6 ms. A
        // read arriving at 4 ms waits for the second program to end (5 ms), not the third.
        let p = Device {
            dies: 1,
            program_us: 1_000.0,
            ..params(1000.0, 100.0, 0.0)
        };
        let mut d = BlockDevice::new("nvme0n1".into(), &p, 5);
        d.submit(Op::Write, 0, 3_000_000);
        let read = d.submit(Op::Read, 4_000_000 - 4, 4);
        assert_eq!(read, 5_000_000 + 100_000);
        // After the last program, no wait.
        assert_eq!(d.submit(Op::Read, 6_000_000, 4), 6_000_004 + 100_000);
    }

    #[test]
    fn writes_count_apart_at_their_own_bandwidth() {
        let mut p = params(1000.0, 0.0, 0.0);
        p.write_bandwidth_mb_s = Some(500.0);
        let mut d = BlockDevice::new("nvme0n1".into(), &p, 1);
        assert_eq!(d.submit(Op::Write, 0, 1_000_000), 2_000_000);
        assert_eq!(d.submit(Op::Read, 0, 1_000_000), 3_000_000);
        assert_eq!((d.stats.wr_ios, d.stats.wr_bytes), (1, 1_000_000));
        assert_eq!((d.stats.rd_ios, d.stats.rd_bytes), (1, 1_000_000));
        assert_eq!(d.stats.wr_ticks_ns, 2_000_000);
    }

    #[test]
    fn a_full_queue_holds_a_request_until_the_oldest_completes() {
        // Depth 2, 1 ms transfers, 10 ms latency: two requests go at once; the third starts
        // when the first completes, not when the transfer stage frees.
        let mut p = params(1000.0, 10_000.0, 0.0);
        p.queue_depth = 2;
        let mut d = BlockDevice::new("nvme0n1".into(), &p, 1);
        let a = d.submit(Op::Read, 0, 1_000_000);
        let b = d.submit(Op::Read, 0, 1_000_000);
        assert_eq!((a, b), (11_000_000, 12_000_000));
        let c = d.submit(Op::Read, 0, 1_000_000);
        assert_eq!(c, a + 1_000_000 + 10_000_000);
        // Unlimited depth: it would have followed b's transfer.
        let mut free = BlockDevice::new("nvme1n1".into(), &params(1000.0, 10_000.0, 0.0), 1);
        for _ in 0..2 {
            free.submit(Op::Read, 0, 1_000_000);
        }
        assert_eq!(free.submit(Op::Read, 0, 1_000_000), 13_000_000);
    }

    #[test]
    fn each_request_costs_the_transfer_stage_its_overhead() {
        let mut p = params(1000.0, 0.0, 0.0);
        p.request_us = 10.0;
        p.max_request_kb = 512;
        let mut d = BlockDevice::new("nvme0n1".into(), &p, 1);
        // 2 MiB in 512 KiB requests: 4 requests, 40 µs on top of the transfer.
        let done = d.submit(Op::Read, 0, 2 << 20);
        assert_eq!(done, ((2u64 << 20) as f64 / 1.0) as u64 + 40_000);
        assert_eq!(d.stats.rd_ios, 4);
    }

    #[test]
    fn each_segment_costs_the_transfer_stage_its_time() {
        // 2000 MB/s, 2.048 µs a segment: 4 MiB in 1024 segments (O_DIRECT into 4 KiB pages)
        // takes twice the transfer, 4 MiB in one (contiguous page cache) the transfer and
        // one segment; a device without the key charges none.
        let p = Device {
            segment_us: 2.048,
            ..params(2000.0, 0.0, 0.0)
        };
        let mut d = BlockDevice::new("vda".into(), &p, 1);
        assert!(d.charges_segments());
        let direct = d.submit_sg(Op::Read, 0, 4 << 20, 1024);
        assert_eq!(direct, 2_097_152 + 1024 * 2_048);
        let buffered = d.submit_sg(Op::Read, direct, 4 << 20, 1) - direct;
        assert_eq!(buffered, 2_097_152 + 2_048);
        assert_eq!(d.stats.busy_ns, direct + buffered);
        let mut plain = BlockDevice::new("vda".into(), &params(2000.0, 0.0, 0.0), 1);
        assert!(!plain.charges_segments());
        assert_eq!(plain.submit_sg(Op::Read, 0, 4 << 20, 1024), 2_097_152);
    }

    fn raid0(disks: u32, stripe_kb: u64) -> Device {
        Device {
            max_request_kb: 512,
            seek_us: 8000.0,
            rotational: true,
            raid0_disks: Some(disks),
            stripe_kb: Some(stripe_kb),
            ..params(100.0, 0.0, 0.0)
        }
    }

    #[test]
    fn a_raid0_maps_stripes_to_its_members_in_turn() {
        let d = BlockDevice::new("md0".into(), &raid0(4, 64), 1);
        let r = d.raid0.as_ref().unwrap();
        assert_eq!(r.map(0), (0, 0));
        assert_eq!(r.map(64 << 10), (1, 0));
        assert_eq!(r.map(((4 * 64) << 10) + 5), (0, (64 << 10) + 5));
        // 320 KiB from 32 KiB: member 0 takes 32 KiB, then a whole stripe of the next row
        // (adjacent on it), member 1 64 KiB then 32 KiB of the next row, members 2 and 3 a
        // stripe each.
        let mut runs = [(0, 0); 4];
        r.split(32 << 10, 320 << 10, &mut runs);
        assert_eq!(
            runs,
            [
                (32 << 10, 96 << 10),
                (0, 96 << 10),
                (0, 64 << 10),
                (0, 64 << 10)
            ]
        );
        assert_eq!(d.raid0_disks(), Some(4));
        assert_eq!(
            BlockDevice::new("sda".into(), &raid0(4, 64), 1).raid0_disks(),
            Some(4)
        );
        let plain = BlockDevice::new("sda".into(), &params(100.0, 0.0, 0.0), 1);
        assert_eq!(plain.raid0_disks(), None);
    }

    #[test]
    fn a_raid0_streams_at_its_members_bandwidth_together() {
        // 4 disks of 100 MB/s: 4 MiB written from offset 0 (1 MiB a member, two 512 KiB
        // requests each) take a quarter of one disk's time; the next 4 MiB continue each
        // member's run: no seek.
        let mib = 1u64 << 20;
        let quarter = 10_485_760; // 1 MiB at 100 MB/s, ns
        let mut d = BlockDevice::new("md0".into(), &raid0(4, 512), 1);
        let a = d.submit_at(Op::Write, 0, 4 * mib, 0);
        assert_eq!(a, quarter);
        let b = d.submit_at(Op::Write, 0, 4 * mib, 4 * mib);
        assert_eq!(b, 2 * quarter);
        assert_eq!((d.stats.wr_bytes, d.stats.wr_ios), (8 * mib, 16));
        let mut one = BlockDevice::new("sda".into(), &raid0(1, 512), 1);
        assert_eq!(one.submit_at(Op::Write, 0, 4 * mib, 0), 4 * quarter);
        // A file read (no offset) continues where the last I/O ended.
        let c = d.submit(Op::Read, b, 4 * mib);
        assert_eq!(c - b, quarter);
    }

    #[test]
    fn scattered_pages_seek_on_their_member_and_members_seek_in_parallel() {
        // 4 KiB pages far apart: each pays a seek on its member; pages on two members
        // seek at once, two on one member one after the other.
        let mut d = BlockDevice::new("md0".into(), &raid0(2, 64), 1);
        let page = 40_960; // 4096 bytes at 100 MB/s, ns
        let a = d.submit_at(Op::Write, 0, 4096, 1 << 30); // member 0
        let b = d.submit_at(Op::Write, 0, 4096, (1 << 30) + (64 << 10)); // member 1
        assert_eq!((a, b), (8_000_000 + page, 8_000_000 + page));
        let c = d.submit_at(Op::Write, 0, 4096, 1 << 31); // member 0 again
        assert_eq!(c, 2 * (8_000_000 + page));
    }

    #[test]
    fn bad_raid0_keys_are_named() {
        let e = raid0(0, 64).validate().unwrap_err();
        assert_eq!(e.key, "raid0_disks");
        assert!(e.message.contains("expected 1 to 64"), "{}", e.message);
        assert_eq!(raid0(65, 64).validate().unwrap_err().key, "raid0_disks");
        assert_eq!(raid0(4, 6).validate().unwrap_err().key, "stripe_kb");
        let stripe_alone = Device {
            stripe_kb: Some(64),
            ..params(100.0, 0.0, 0.0)
        };
        assert_eq!(stripe_alone.validate().unwrap_err().key, "stripe_kb");
        assert_eq!(raid0(4, 64).validate(), Ok(()));
    }

    fn layer(p: Device) -> BlockLayer {
        BlockLayer::new(&[p], 1)
    }

    fn write(l: &mut BlockLayer, now: Ns, offset: u64, bytes: u64) -> u32 {
        let bio = l.bios.alloc(0, Op::Write);
        l.submit_bio(bio, now, bytes, Some(offset), 0);
        bio
    }

    #[test]
    fn the_elevator_is_on_rotational_disks_with_a_seek_only() {
        let mut p = raid0(4, 512);
        assert!(p.has_elevator());
        p.elevator = Some(crate::machine::ElevatorKind::None);
        assert!(!p.has_elevator());
        let usb = Device {
            rotational: true,
            ..params(20.0, 500.0, 0.0)
        };
        assert!(!usb.has_elevator());
        let span_without = Device {
            seek_span_mb: 1000.0,
            ..params(100.0, 0.0, 0.0)
        };
        assert_eq!(span_without.validate().unwrap_err().key, "seek_span_mb");
    }

    #[test]
    fn scattered_pages_queued_together_are_written_in_sector_order() {
        // One disk of 100 MB/s, 12 ms seeks, 100 µs latency. A 512 KiB write at 0 keeps it
        // busy for 5.24 ms; meanwhile single pages at 4 places of one region (as reclaim
        // sends them, out of order: 3, 1, 2, 0) queue behind it. Sorted, the batch the
        // stream began goes on in sector order: one seek to page 0, then each page costs
        // the platter's turn past the 60 KiB gap (614 µs), not a seek; in submission
        // order three of them would be 12 ms seeks backwards.
        let p = Device {
            max_request_kb: 512,
            seek_us: 12_000.0,
            latency_us: 100.0,
            rotational: true,
            ..params(100.0, 0.0, 0.0)
        };
        let mut l = layer(p);
        let stream = write(&mut l, 0, 0, 512 << 10);
        let base = 1u64 << 30;
        let at = |i: u64| base + i * (64 << 10);
        let pages: Vec<u32> = [3, 1, 2, 0]
            .iter()
            .map(|&i| write(&mut l, 1_000, at(i), 4096))
            .collect();
        let first = 5_242_880; // 512 KiB at 100 MB/s
        assert_eq!(l.bios[stream].done_at, first + 100_000);
        let page = 40_960;
        let gap = 614_400; // 60 KiB at 100 MB/s
        let t0 = first + 12_000_000 + page;
        let t1 = t0 + gap + page;
        let t2 = t1 + gap + page;
        let t3 = t2 + gap + page;
        let done: Vec<Ns> = pages.iter().map(|&b| l.bios[b].done_at).collect();
        assert_eq!(
            done,
            vec![t3 + 100_000, t1 + 100_000, t2 + 100_000, t0 + 100_000]
        );
        // A page just after page 3, queued once page 0 has started: it back-merges into
        // page 3's request, which now ends a page later, with it; pages 1 and 2 are as
        // they were.
        let late = write(&mut l, first + 1, at(3) + 4096, 4096);
        assert_eq!(l.bios[late].done_at, t3 + page + 100_000);
        let later: Vec<Ns> = pages.iter().map(|&b| l.bios[b].done_at).collect();
        assert_eq!(later, vec![t3 + page + 100_000, done[1], done[2], done[3]]);
        // Counters: requests as they are dispatched (the stream and page 0 by now), the
        // merged pages one request.
        l.sync(first + 2);
        assert_eq!(l.devices[0].stats.wr_ios, 2);
        l.sync(Ns::MAX / 2);
        assert_eq!(l.devices[0].stats.wr_ios, 5);
        assert_eq!(l.devices[0].stats.wr_bytes, (512 << 10) + 5 * 4096);
    }

    #[test]
    fn adjacent_writes_queued_behind_a_busy_disk_merge_into_one_request() {
        // Sixteen single pages, consecutive, queued while the disk is busy: one 64 KiB
        // request, one I/O in the counters, all sixteen completing together.
        let p = Device {
            max_request_kb: 512,
            seek_us: 12_000.0,
            rotational: true,
            ..params(100.0, 0.0, 0.0)
        };
        let mut l = layer(p);
        write(&mut l, 0, 1 << 30, 512 << 10);
        let pages: Vec<u32> = (0..16u64)
            .map(|i| write(&mut l, 1, i * 4096, 4096))
            .collect();
        let end = l.bios[pages[0]].done_at;
        assert!(pages.iter().all(|&b| l.bios[b].done_at == end));
        // A 12 ms seek from 0 to the stream, its 5.24 ms, a 12 ms seek back to 0, 64 KiB
        // of data.
        assert_eq!(end, 12_000_000 + 5_242_880 + 12_000_000 + 655_360);
        l.sync(Ns::MAX / 2);
        assert_eq!(l.devices[0].stats.wr_ios, 2);
    }

    #[test]
    fn a_raid0_elevator_queues_on_each_member_and_repeats() {
        // 4 members, 64 KiB stripes: pages scattered over the array, 64 at a time, with
        // jitter: each member sorts its own; the same seed gives the same completions.
        let run = |seed| {
            let p = Device {
                jitter: 0.5,
                latency_jitter: 0.5,
                ..raid0(4, 64)
            };
            let mut l = BlockLayer::new(&[p], seed);
            let mut done = Vec::new();
            for i in 0..64u64 {
                let b = write(&mut l, i * 100_000, (i * 7919 % 257) * (36 << 10), 4096);
                done.push(b);
            }
            let d: Vec<Ns> = done.iter().map(|&b| l.bios[b].done_at).collect();
            l.sync(Ns::MAX / 2);
            (d, l.devices[0].stats)
        };
        let (a, sa) = run(3);
        assert_eq!((a.clone(), sa), run(3));
        assert_ne!(a, run(4).0);
        assert_eq!(sa.wr_ios, 64);
        // Each member served a quarter or so: no member idles while another has 60.
        assert!(
            a.iter().all(|&d| d < 64 * 100_000 + 30 * 12_000_000),
            "{a:?}"
        );
    }

    #[test]
    #[should_panic(expected = "before it completed")]
    fn a_bio_in_flight_cannot_be_put() {
        let mut b = Bios::default();
        let a = b.alloc(0, Op::Read);
        b[a].done_at = 10;
        b.put(a, 9);
    }

    #[test]
    fn bios_are_reused_once_put() {
        let mut b = Bios::default();
        let a = b.alloc(0, Op::Read);
        b[a].pages.push(7);
        b[a].done_at = 10;
        b.put(a, 10);
        let again = b.alloc(3, Op::Write);
        assert_eq!(again, a);
        assert!(b[again].pages.is_empty() && !b[again].done(10));
        assert_eq!((b[again].dev, b.nr_in_use()), (3, 1));
    }
}
