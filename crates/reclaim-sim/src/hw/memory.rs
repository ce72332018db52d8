//! Memory bandwidth per node. Streaming page-cache reads move each byte three times through
//! DRAM (the device's DMA write, copy_to_user's read, and its write to the user buffer); as a
//! node's traffic nears its bandwidth, memory-bound work (copies, page initialisation) slows,
//! as loaded memory latency grows: cost × 1/(1 − u) with u the node's utilisation (capped at
//! 0.9). This is what makes a dd task's CPU time per page grow with the number of readers
//! when nothing else is contended (seed 000, Test 2: 1.4 µs per page at 5 GB/s, 2.7 µs at
//! 25 GB/s). A bandwidth of 0 turns the effect off.

use crate::engine::{Ns, NSEC_PER_MSEC};

/// Traffic is summed over 1 ms buckets and smoothed (time constant ≈ 5 ms).
const BUCKET: Ns = NSEC_PER_MSEC;
const ALPHA: f64 = 0.2;
const MAX_UTILISATION: f64 = 0.9;

#[derive(Clone, Debug, Default)]
pub struct MemoryBandwidth {
    /// Bytes per nanosecond (0: unlimited).
    bandwidth: f64,
    bucket_start: Ns,
    bucket_bytes: u64,
    /// Smoothed traffic, bytes per nanosecond.
    rate: f64,
    pub total_bytes: u64,
}

impl MemoryBandwidth {
    pub fn new(bandwidth_mb_s: f64) -> MemoryBandwidth {
        MemoryBandwidth {
            bandwidth: bandwidth_mb_s * 1e6 / 1e9,
            ..Default::default()
        }
    }

    /// Account `bytes` of DRAM traffic at `now`.
    pub fn add(&mut self, now: Ns, bytes: u64) {
        if now >= self.bucket_start + BUCKET {
            let elapsed = (now - self.bucket_start).max(BUCKET) as f64;
            let sample = self.bucket_bytes as f64 / elapsed;
            // Buckets with no traffic at all decay the rate once per elapsed bucket.
            let idle = ((now - self.bucket_start) / BUCKET)
                .saturating_sub(1)
                .min(64) as i32;
            self.rate = (ALPHA * sample + (1.0 - ALPHA) * self.rate) * (1.0 - ALPHA).powi(idle);
            self.bucket_start = now;
            self.bucket_bytes = 0;
        }
        self.bucket_bytes += bytes;
        self.total_bytes += bytes;
    }

    pub fn utilisation(&self) -> f64 {
        if self.bandwidth <= 0.0 {
            return 0.0;
        }
        (self.rate / self.bandwidth).min(MAX_UTILISATION)
    }

    /// The cost of `ns` of memory-bound work at the current utilisation.
    #[inline]
    pub fn scale(&self, ns: Ns) -> Ns {
        (ns as f64 / (1.0 - self.utilisation())) as Ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_grows_with_traffic_and_relaxes_when_idle() {
        let mut m = MemoryBandwidth::new(10_000.0); // 10 GB/s = 10 bytes/ns
        assert_eq!(m.scale(1000), 1000);
        // 5 bytes/ns for 100 ms: utilisation settles at 0.5, cost doubles.
        for t in 0..100_000u64 {
            m.add(t * 1000, 5000);
        }
        assert!((m.utilisation() - 0.5).abs() < 0.02, "{}", m.utilisation());
        assert!((1900..2100).contains(&m.scale(1000)));
        m.add(200 * NSEC_PER_MSEC, 0);
        m.add(300 * NSEC_PER_MSEC, 0);
        assert!(m.utilisation() < 0.01);
    }

    #[test]
    fn zero_bandwidth_means_unlimited() {
        let mut m = MemoryBandwidth::new(0.0);
        m.add(0, 1 << 40);
        m.add(2 * NSEC_PER_MSEC, 1 << 40);
        assert_eq!(m.scale(1234), 1234);
    }
}
