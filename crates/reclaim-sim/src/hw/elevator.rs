//! A rotating disk's request queue as 3.2's writeback met it: the deadline I/O scheduler
//! (block/deadline-iosched.c, 3.2; mq-deadline today keeps its rules and defaults) in front
//! of a disk that serves one request at a time and seeks between requests that are not
//! adjacent.
//!
//! **Queueing and merging** (`deadline_add_request()`, `elv_merge()` → `deadline_merge()`,
//! `elv_attempt_insert_merge()`): a new part of a bio joins a queued request of its
//! direction that ends where it starts (back merge) or starts where it ends (front merge)
//! if the merged request stays within `max_request_kb` (`max_sectors`), and a request that
//! grows up to the next one is merged with it (`attempt_back_merge()` /
//! `attempt_front_merge()`), keeping the earlier FIFO time (`deadline_merged_requests()`).
//! A request being served takes nothing more.
//!
//! **Dispatch** (`deadline_dispatch_requests()`, 3.2): a batch goes on in sector order
//! from the last request dispatched (`next_rq`) for up to `fifo_batch` (16) requests; then
//! reads are preferred unless writes have been passed over `writes_starved` (2) times
//! while waiting; the new batch starts at the direction's oldest request if its FIFO time
//! has expired (`read_expire` 500 ms, `write_expire` 5 s) or nothing follows in sector
//! order, else at the next request in sector order. The queue holds at most `nr_requests`
//! (128, BLKDEV_MAX_RQ) requests a disk: `BlockDevice::tags_full` tells a submitter to wait
//! (`get_request_wait()`). Departures: `next_rq` is looked up at each dispatch from the
//! last dispatched position (as mq-deadline's `deadline_from_pos()`; 3.2 fixed it at the
//! dispatch before, so a request queued meanwhile just after the head waited a batch);
//! the disk has no command queue of its own (no NCQ reordering), and reads and writes
//! share one limit of `nr_requests`.
//!
//! **The disk** serves a request in `seek(head → pos) + request_us + data / bandwidth`
//! (the data's time drawn with the device's `jitter` when the part is queued). The seek's
//! shape (`Seek::cost`): none for a request that starts where the last one ended; for one
//! a little ahead, the time the platter takes to turn past the gap at the media rate
//! (the device's read bandwidth), if that is less than a seek; otherwise `seek_us` (the
//! scenario's average seek plus half a revolution), scaled by `sqrt(distance /
//! seek_span)` for distances below `seek_span_mb` when that key is given — a short seek's
//! arm travel grows as the square root of the distance (acceleration-limited: Ruemmler
//! and Wilkes, "An introduction to disk drive modeling", IEEE Computer 1994) — and whole
//! otherwise (0, the default: every seek costs `seek_us`). Departures: the scaled seek has
//! no floor (a seek of a few tracks costs less than a real disk's settle time and
//! rotational wait), and a short backward seek costs its scaled arm travel only, where a
//! real disk also waits for most of a revolution; no zoned media rate, no track or
//! cylinder boundaries, no disk cache.
//!
//! **Time** (the simulator computes an I/O's completion when it is submitted): each
//! submission first dispatches (commits) the requests the disk would have started before
//! it, then queues its parts, then plans the rest of the queue by the same rules to give
//! every queued I/O its completion time. A later submission can only re-plan requests not
//! yet started; an I/O's completion is never moved earlier than a plan gave it (one moved
//! later is completed later, `process::Sim::complete_io`). A plan is exact until the next
//! submission, which is the only thing that can change it.

use crate::engine::Ns;
use crate::hw::block::Op;

/// `read_expire`: HZ / 2 (block/deadline-iosched.c, 3.2; mq-deadline's default).
pub const READ_EXPIRE: Ns = 500_000_000;
/// `write_expire`: 5 · HZ.
pub const WRITE_EXPIRE: Ns = 5_000_000_000;
/// `fifo_batch`: requests a batch dispatches in sector order before the FIFOs are checked.
pub const FIFO_BATCH: u32 = 16;
/// `writes_starved`: how many read batches may pass queued writes over.
pub const WRITES_STARVED: u32 = 2;
/// `nr_requests`: BLKDEV_MAX_RQ, the requests a queue holds before a submitter waits.
pub const NR_REQUESTS: usize = 128;

/// The cost of moving a disk's head (module doc: the shape and its departures).
#[derive(Clone, Copy, Debug)]
pub struct Seek {
    /// `seek_us`: a seek over `span` or more.
    pub seek_ns: Ns,
    /// `seek_span_mb` in bytes (0: every seek costs `seek_ns`).
    pub span: u64,
    /// The media rate, bytes per ns: a gap ahead passes under the head at it.
    pub media_bytes_per_ns: f64,
}

impl Seek {
    /// The time from the end of the last request, at `head`, to the start of one at `pos`.
    pub fn cost(&self, head: u64, pos: u64) -> Ns {
        if pos == head {
            return 0;
        }
        let distance = pos.abs_diff(head);
        let seek = if self.span == 0 || distance >= self.span {
            self.seek_ns
        } else {
            (self.seek_ns as f64 * (distance as f64 / self.span as f64).sqrt()) as Ns
        };
        if pos > head {
            let turn = (distance as f64 / self.media_bytes_per_ns) as Ns;
            seek.min(turn)
        } else {
            seek
        }
    }
}

/// One queued request (`struct request`): contiguous bytes of one direction, made of parts
/// of one or more bios.
#[derive(Clone, Debug)]
pub struct Request {
    pub op: Op,
    /// Its first byte on the disk, and its length.
    pub pos: u64,
    pub bytes: u64,
    /// When its first part was queued, and its FIFO deadline (`rq->fifo_time`).
    pub arrival: Ns,
    pub fifo_time: Ns,
    /// FIFO order among equal deadlines.
    seq: u64,
    /// The disk's time on its data (drawn when each part was queued) and segments.
    pub xfer: Ns,
    /// The I/Os it carries a part of.
    pub bios: Vec<u32>,
    /// Where the last plan put it: when the disk starts it and when it ends.
    pub start: Ns,
    pub done: Ns,
}

/// What the next dispatch depends on.
#[derive(Clone, Copy, Debug, Default)]
struct State {
    /// When the disk is free, and where its last request ended.
    free_at: Ns,
    head: u64,
    /// `next_rq`: the batch's direction and the sector of its last request.
    batch: Option<(Op, u64)>,
    batching: u32,
    starved: u32,
}

/// A request dispatched to the disk: its bytes, direction, when it was queued, when the
/// disk served it and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatched {
    pub op: Op,
    pub bytes: u64,
    pub arrival: Ns,
    pub done: Ns,
    pub service: Ns,
}

/// One disk's deadline queue.
#[derive(Clone, Debug, Default)]
pub struct Deadline {
    st: State,
    pub pending: Vec<Request>,
    /// Bio vectors of dispatched requests, for reuse.
    spare: Vec<Vec<u32>>,
    seq: u64,
    /// The plan's marks of requests already placed (scratch).
    taken: Vec<bool>,
}

impl Deadline {
    /// Queue `bytes` at disk byte `pos` of I/O `bio`, submitted at `now`, whose data takes
    /// the disk `xfer`: merged into a queued request if adjacent and within `max_bytes`.
    /// The caller has committed up to `now` and plans after.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        op: Op,
        pos: u64,
        bytes: u64,
        now: Ns,
        xfer: Ns,
        bio: u32,
        max_bytes: u64,
    ) {
        let end = pos + bytes;
        let back = self
            .pending
            .iter()
            .position(|r| r.op == op && r.pos + r.bytes == pos && r.bytes + bytes <= max_bytes);
        if let Some(i) = back {
            let r = &mut self.pending[i];
            r.bytes += bytes;
            r.xfer += xfer;
            if r.bios.last() != Some(&bio) {
                r.bios.push(bio);
            }
            // attempt_back_merge(): the request now reaching the next one.
            let reach = r.pos + r.bytes;
            let total = r.bytes;
            if let Some(j) = self
                .pending
                .iter()
                .position(|n| n.op == op && n.pos == reach && total + n.bytes <= max_bytes)
            {
                self.merge_requests(i, j);
            }
            return;
        }
        let front = self
            .pending
            .iter()
            .position(|r| r.op == op && r.pos == end && r.bytes + bytes <= max_bytes);
        if let Some(i) = front {
            let r = &mut self.pending[i];
            r.pos = pos;
            r.bytes += bytes;
            r.xfer += xfer;
            if !r.bios.contains(&bio) {
                r.bios.push(bio);
            }
            // attempt_front_merge(): the one before now reaching it.
            let total = r.bytes;
            if let Some(j) = self
                .pending
                .iter()
                .position(|p| p.op == op && p.pos + p.bytes == pos && total + p.bytes <= max_bytes)
            {
                self.merge_requests(j, i);
            }
            return;
        }
        let expire = match op {
            Op::Read => READ_EXPIRE,
            Op::Write => WRITE_EXPIRE,
        };
        let mut bios = self.spare.pop().unwrap_or_default();
        bios.clear();
        bios.push(bio);
        self.seq += 1;
        self.pending.push(Request {
            op,
            pos,
            bytes,
            arrival: now,
            fifo_time: now + expire,
            seq: self.seq,
            xfer,
            bios,
            start: 0,
            done: 0,
        });
    }

    /// Merge queued request `j` into `i`, which it follows on the disk
    /// (`deadline_merged_requests()`: the merged one keeps the earlier FIFO time).
    fn merge_requests(&mut self, i: usize, j: usize) {
        let next = self.pending.swap_remove(j);
        let i = if i == self.pending.len() { j } else { i };
        let r = &mut self.pending[i];
        r.bytes += next.bytes;
        r.xfer += next.xfer;
        for &b in &next.bios {
            if !r.bios.contains(&b) {
                r.bios.push(b);
            }
        }
        if (next.fifo_time, next.seq) < (r.fifo_time, r.seq) {
            r.fifo_time = next.fifo_time;
            r.seq = next.seq;
        }
        r.arrival = r.arrival.min(next.arrival);
        self.spare.push(next.bios);
    }

    /// `deadline_dispatch_requests()` once from `st` over the requests not `taken`: the
    /// request the disk serves next, when it starts and ends; `st` moves past it.
    fn dispatch(
        st: &mut State,
        pending: &[Request],
        taken: &[bool],
        seek: &Seek,
        request_ns: Ns,
    ) -> Option<(usize, Ns, Ns)> {
        let untaken = || (0..pending.len()).filter(|&i| !taken[i]);
        let first = untaken().map(|i| pending[i].arrival).min()?;
        // Idle until the first request arrives, if it has not by the time the disk frees.
        let t = st.free_at.max(first);
        let eligible = |i: usize| !taken[i] && pending[i].arrival <= t;
        // The request after sector `from` in direction `dir`, in sector order.
        let next_rq = |dir: Op, from: u64| {
            (0..pending.len())
                .filter(|&i| eligible(i) && pending[i].op == dir && pending[i].pos >= from)
                .min_by_key(|&i| (pending[i].pos, pending[i].seq))
        };
        let mut pick = None;
        if let Some((dir, from)) = st.batch {
            if st.batching < FIFO_BATCH {
                pick = next_rq(dir, from);
            }
        }
        if pick.is_none() {
            let has = |op: Op| (0..pending.len()).any(|i| eligible(i) && pending[i].op == op);
            let (reads, writes) = (has(Op::Read), has(Op::Write));
            let dir = if reads
                && !(writes && {
                    let s = st.starved;
                    st.starved += 1;
                    s >= WRITES_STARVED
                }) {
                Op::Read
            } else {
                st.starved = 0;
                Op::Write
            };
            let fifo = (0..pending.len())
                .filter(|&i| eligible(i) && pending[i].op == dir)
                .min_by_key(|&i| (pending[i].fifo_time, pending[i].seq))
                .expect("a request of the direction chosen");
            let next = match st.batch {
                Some((d, from)) if d == dir => next_rq(dir, from),
                _ => None,
            };
            pick = Some(match next {
                Some(n) if pending[fifo].fifo_time > t => n,
                _ => fifo,
            });
            st.batching = 0;
        }
        let i = pick?;
        let r = &pending[i];
        st.batching += 1;
        let done = t + seek.cost(st.head, r.pos) + request_ns + r.xfer;
        st.free_at = done;
        st.head = r.pos + r.bytes;
        st.batch = Some((r.op, r.pos));
        Some((i, t, done))
    }

    /// Dispatch the requests the disk starts before `now`, each to `out`.
    pub fn commit(
        &mut self,
        now: Ns,
        seek: &Seek,
        request_ns: Ns,
        out: &mut impl FnMut(Dispatched),
    ) {
        loop {
            self.taken.clear();
            self.taken.resize(self.pending.len(), false);
            let mut st = self.st;
            let Some((i, start, done)) =
                Self::dispatch(&mut st, &self.pending, &self.taken, seek, request_ns)
            else {
                return;
            };
            if start >= now {
                return;
            }
            self.st = st;
            let r = self.pending.swap_remove(i);
            out(Dispatched {
                op: r.op,
                bytes: r.bytes,
                arrival: r.arrival,
                done,
                service: done - start,
            });
            self.spare.push(r.bios);
        }
    }

    /// Plan the queue from the disk's state: each request's `start` and `done`.
    pub fn plan(&mut self, seek: &Seek, request_ns: Ns) {
        let n = self.pending.len();
        self.taken.clear();
        self.taken.resize(n, false);
        let mut st = self.st;
        for _ in 0..n {
            let (i, start, done) =
                Self::dispatch(&mut st, &self.pending, &self.taken, seek, request_ns)
                    .expect("a queued request");
            self.taken[i] = true;
            self.pending[i].start = start;
            self.pending[i].done = done;
        }
    }

    /// Requests queued and not yet started.
    pub fn nr_queued(&self) -> usize {
        self.pending.len()
    }

    /// When the first queued request ends, as planned.
    pub fn first_done(&self) -> Option<Ns> {
        self.pending.iter().map(|r| r.done).min()
    }

    /// When the disk is free of the requests dispatched so far.
    pub fn free_at(&self) -> Ns {
        self.st.free_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = 1_000_000;

    fn seek(span: u64) -> Seek {
        // 100 MB/s: 4096 bytes pass in 40 960 ns.
        Seek {
            seek_ns: 12 * MS,
            span,
            media_bytes_per_ns: 0.1,
        }
    }

    #[test]
    fn the_seek_grows_with_the_distance() {
        let s = seek(1 << 30);
        // Adjacent: nothing. 40 KiB ahead: 12 ms · sqrt(40 KiB / 1 GiB) = 74.1 µs, less
        // than the 409.6 µs the platter takes to turn past it.
        assert_eq!(s.cost(4096, 4096), 0);
        assert_eq!(s.cost(0, 40 << 10), 74_115);
        // 40 MiB ahead: 12 ms · sqrt(40/1024) = 2.37 ms, against 419 ms of turning.
        assert_eq!(s.cost(0, 40 << 20), 2_371_708);
        // 256 MiB back: sqrt(1/4) of the full seek. 64 MiB ahead: sqrt(1/16) = 3 ms,
        // less than the 671 ms the platter would take to turn past it.
        assert_eq!(s.cost(256 << 20, 0), 6 * MS);
        assert_eq!(s.cost(0, 64 << 20), 3 * MS);
        // A span or more, either way: the whole seek.
        assert_eq!(s.cost(0, 1 << 30), 12 * MS);
        assert_eq!(s.cost(5 << 30, 0), 12 * MS);
        // No span: every seek whole, unless turning past the gap is shorter.
        let flat = seek(0);
        assert_eq!(flat.cost(1 << 20, 0), 12 * MS);
        assert_eq!(flat.cost(0, 1 << 20), 10_485_760);
        assert_eq!(flat.cost(0, 2 << 20), 12 * MS);
    }

    fn queue(dl: &mut Deadline, now: Ns, parts: &[(Op, u64, u64, u32)]) {
        for &(op, pos, bytes, bio) in parts {
            // 10 ns a byte of data, to keep the arithmetic by hand readable.
            dl.add(op, pos, bytes, now, bytes * 10, bio, 512 << 10);
        }
    }

    #[test]
    fn adjacent_parts_merge_up_to_the_request_size() {
        let mut dl = Deadline::default();
        let k = 4096;
        queue(
            &mut dl,
            0,
            &[
                (Op::Write, 10 * k, k, 1),
                (Op::Write, 11 * k, k, 2), // back merge
                (Op::Write, 9 * k, k, 3),  // front merge
                (Op::Write, 13 * k, k, 4), // a gap: its own request
                (Op::Write, 12 * k, k, 5), // fills the gap: the two become one
                (Op::Read, 14 * k, k, 6),  // other direction: apart
                (Op::Write, 100 * k, 512 << 10, 7),
                (Op::Write, 228 * k, k, 8), // 512 KiB already: apart
            ],
        );
        let mut got: Vec<(Op, u64, u64, Vec<u32>)> = dl
            .pending
            .iter()
            .map(|r| (r.op, r.pos / k, r.bytes / k, r.bios.clone()))
            .collect();
        got.sort_by_key(|g| (g.1, g.3.clone()));
        assert_eq!(
            got,
            vec![
                (Op::Write, 9, 5, vec![1, 2, 3, 5, 4]),
                (Op::Read, 14, 1, vec![6]),
                (Op::Write, 100, 128, vec![7]),
                (Op::Write, 228, 1, vec![8]),
            ]
        );
        let merged = dl.pending.iter().find(|r| r.pos == 9 * k).unwrap();
        assert_eq!(merged.xfer, 5 * k * 10);
    }

    #[test]
    fn queued_writes_go_out_in_sector_order_from_the_oldest() {
        // Five scattered writes queued at once on an idle disk at 0: the batch starts at the
        // oldest (FIFO head, sector 50) and sweeps up; those below it wait for the next batch,
        // which starts from the FIFO again (sector 30, the oldest left).
        let mut dl = Deadline::default();
        let k = 4096;
        queue(
            &mut dl,
            0,
            &[
                (Op::Write, 50 * k, k, 1),
                (Op::Write, 90 * k, k, 2),
                (Op::Write, 30 * k, k, 3),
                (Op::Write, 70 * k, k, 4),
                (Op::Write, 10 * k, k, 5),
            ],
        );
        let s = seek(0);
        dl.plan(&s, 0);
        let mut order: Vec<(Ns, u64)> = dl.pending.iter().map(|r| (r.start, r.pos / k)).collect();
        order.sort();
        let sectors: Vec<u64> = order.iter().map(|o| o.1).collect();
        assert_eq!(sectors, vec![50, 70, 90, 30, 10]);
        // By hand: the head starts at 0; 50 pages ahead is 2.048 ms of platter, then 19
        // pages ahead (778 µs) twice, then two backward seeks of 12 ms; each 40 960 ns of
        // data.
        let data = 40_960;
        let turn19 = (19 * k) as f64 / 0.1;
        let ends: Vec<Ns> = {
            let mut d: Vec<Ns> = dl.pending.iter().map(|r| r.done).collect();
            d.sort();
            d
        };
        let e0 = 2_048_000 + data;
        let e1 = e0 + turn19 as Ns + data;
        let e2 = e1 + turn19 as Ns + data;
        let e3 = e2 + 12 * MS + data;
        let e4 = e3 + 12 * MS + data;
        assert_eq!(ends, vec![e0, e1, e2, e3, e4]);
        // Committing before e1 dispatches the first only, which a re-plan leaves alone.
        let mut seen = Vec::new();
        dl.commit(e0, &s, 0, &mut |d| seen.push(d));
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].done, seen[0].service), (e0, e0));
        dl.plan(&s, 0);
        let mut d: Vec<Ns> = dl.pending.iter().map(|r| r.done).collect();
        d.sort();
        assert_eq!(d, vec![e1, e2, e3, e4]);
    }

    #[test]
    fn an_expired_read_goes_first_and_writes_are_not_starved() {
        let k = 4096;
        let s = seek(0);
        // A write batch in progress on a busy disk: reads queued meanwhile go first at the
        // next batch (reads preferred), writes after `writes_starved` read batches.
        let mut dl = Deadline::default();
        dl.st.free_at = 0;
        let mut parts = Vec::new();
        for i in 0..40u32 {
            parts.push((Op::Write, u64::from(i) * 1000 * k, k, i));
        }
        for i in 0..40u32 {
            parts.push((Op::Read, (500 + u64::from(i)) * 1000 * k, k, 100 + i));
        }
        queue(&mut dl, 0, &parts);
        dl.plan(&s, 0);
        let mut order: Vec<(Ns, Op)> = dl.pending.iter().map(|r| (r.start, r.op)).collect();
        order.sort_by_key(|o| o.0);
        let ops: Vec<Op> = order.iter().map(|o| o.1).collect();
        // Reads first (16, 16), then writes once starved twice (16), reads (8), writes.
        let runs: Vec<(Op, usize)> = ops
            .chunk_by(|a, b| a == b)
            .map(|c| (c[0], c.len()))
            .collect();
        assert_eq!(
            runs,
            vec![
                (Op::Read, 32),
                (Op::Write, 16),
                (Op::Read, 8),
                (Op::Write, 24)
            ]
        );
        // The fifo: a write older than write_expire is taken first in its batch even with a
        // write ahead of the head in sector order.
        let mut dl = Deadline::default();
        queue(&mut dl, 0, &[(Op::Write, 10 * k, k, 1)]);
        queue(&mut dl, 6_000 * MS, &[(Op::Write, 100 * k, k, 2)]);
        dl.st.batch = Some((Op::Write, 50 * k));
        dl.st.batching = FIFO_BATCH; // the batch is over
        dl.st.free_at = 6_000 * MS;
        dl.plan(&s, 0);
        let first = dl.pending.iter().min_by_key(|r| r.start).unwrap();
        assert_eq!(first.pos, 10 * k);
    }

    #[test]
    fn the_plan_repeats() {
        let build = || {
            let mut dl = Deadline::default();
            for i in 0..100u64 {
                let pos = (i * 7919 % 101) * 4096 * 3;
                dl.add(Op::Write, pos, 4096, i * 1000, 40_960, i as u32, 512 << 10);
            }
            dl.plan(&seek(1 << 30), 5_000);
            dl.pending
                .iter()
                .map(|r| (r.pos, r.start, r.done))
                .collect::<Vec<_>>()
        };
        assert_eq!(build(), build());
    }
}
