//! Block devices as queues: a FIFO transfer stage at the device's bandwidth, then a fixed
//! completion latency that overlaps other requests' transfers (an NVMe drive's internal
//! parallelism). One stream sees `latency + size/bandwidth` per request; enough concurrent
//! streams keep the transfer stage busy and the device saturates at its bandwidth
//! (seed 000, Test 1). Transfer times vary from request to request (`jitter`: the fraction of
//! a transfer drawn from an exponential distribution with the same mean), so that queues form
//! before saturation as on a real drive and throughput bends towards the bandwidth rather
//! than hitting it (seed 000, Test 2). Counters follow /proc/diskstats.

use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use crate::engine::{Ns, NSEC_PER_SEC};

#[derive(Clone, Debug)]
pub struct BlockDevice {
    pub name: String,
    /// Bytes per nanosecond.
    bandwidth: f64,
    latency: Ns,
    pub max_request_bytes: u64,
    transfer_free_at: Ns,
    jitter: f64,
    rng: Pcg64Mcg,
    pub stats: DiskStats,
}

/// Cumulative counters, as the fields of /proc/diskstats.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskStats {
    pub rd_ios: u64,
    pub rd_bytes: u64,
    /// Σ per-request time from submission to completion (rd_ticks, in ns).
    pub rd_ticks_ns: u64,
    /// Time the transfer stage was busy (io_ticks).
    pub busy_ns: u64,
}

impl BlockDevice {
    pub fn new(
        name: String,
        bandwidth_mb_s: f64,
        latency_us: f64,
        max_request_kb: u64,
        jitter: f64,
        seed: u64,
    ) -> BlockDevice {
        BlockDevice {
            name,
            bandwidth: bandwidth_mb_s * 1e6 / NSEC_PER_SEC as f64,
            latency: (latency_us * 1e3) as Ns,
            max_request_bytes: max_request_kb * 1024,
            transfer_free_at: 0,
            jitter,
            rng: Pcg64Mcg::seed_from_u64(seed),
            stats: DiskStats::default(),
        }
    }

    /// Submit a read of `bytes` at `now` (split into max-size requests submitted together);
    /// returns when the last part completes.
    pub fn submit_read(&mut self, now: Ns, bytes: u64) -> Ns {
        let parts = bytes.div_ceil(self.max_request_bytes).max(1);
        let start = self.transfer_free_at.max(now);
        let mean = bytes as f64 / self.bandwidth;
        let exp = if self.jitter > 0.0 {
            -(1.0 - self.rng.gen::<f64>()).ln()
        } else {
            1.0
        };
        let transfer = (mean * ((1.0 - self.jitter) + self.jitter * exp)) as Ns;
        self.transfer_free_at = start + transfer;
        let done = self.transfer_free_at + self.latency;
        self.stats.rd_ios += parts;
        self.stats.rd_bytes += bytes;
        self.stats.rd_ticks_ns += (done - now) * parts;
        self.stats.busy_ns += transfer;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stream_sees_latency_plus_transfer() {
        let mut d = BlockDevice::new("nvme0n1".into(), 4000.0, 100.0, 4096, 0.0, 1);
        let done = d.submit_read(0, 4_000_000);
        assert_eq!(done, 1_000_000 + 100_000);
    }

    #[test]
    fn concurrent_streams_saturate_the_bandwidth() {
        let mut d = BlockDevice::new("nvme0n1".into(), 1000.0, 500.0, 4096, 0.0, 1);
        // Eight back-to-back 1 MB requests: the transfers serialise at 1 GB/s.
        let last = (0..8).map(|_| d.submit_read(0, 1_000_000)).max().unwrap();
        assert_eq!(last, 8_000_000 + 500_000);
        assert_eq!(d.stats.rd_bytes, 8_000_000);
    }

    #[test]
    fn jitter_keeps_the_mean_and_repeats_with_the_seed() {
        let run = |seed| {
            let mut d = BlockDevice::new("nvme0n1".into(), 1000.0, 0.0, 4096, 1.0, seed);
            (0..20_000)
                .map(|_| d.submit_read(0, 100_000))
                .max()
                .unwrap()
        };
        let total = run(7);
        assert_eq!(total, run(7));
        assert_ne!(total, run(8));
        let mean = total as f64 / 20_000.0;
        assert!((mean - 100_000.0).abs() < 3_000.0, "{mean}");
    }
}
