//! Kernel variants: each change the seed documents describe is a switch here, so that a seed
//! experiment is a scenario file rather than code. One table, one place to add a variant.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Variant {
    /// Seed 000: kswapd threads per node (`vm.kswapd_threads`, 1–16). Every thread runs the
    /// unchanged `kswapd()` on the node's pgdat and waits on the same `kswapd_wait`, as in
    /// the RFC patch ("vmscan: Support multiple kswapd threads per node", 2018).
    pub kswapd_threads: u32,
}

impl Default for Variant {
    fn default() -> Self {
        Variant { kswapd_threads: 1 }
    }
}
