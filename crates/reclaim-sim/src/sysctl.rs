//! The `[sysctl]` section of a scenario and the tunables the simulated kernel runs with, from
//! one table: each key is written once below, with its type, the kernel's default, its range,
//! the file a live run writes it to and whether the simulator models it. From that table come
//! `SysctlSettings` (the section as a user writes it: every key optional), `Sysctl` (the
//! values the simulated kernel runs with: the kernel's default where the section is silent)
//! and `SYSCTL_KEYS` (what `reclaimlab live check` lists and the live runner writes, read by
//! Python through `_core.machine.sysctl_files`). Like `machine` and `variant`, it lives below
//! the kernel and imports nothing of the crate but `machine::Invalid`.

use serde::{Deserialize, Serialize};

use crate::machine::Invalid;

/// One key of `[sysctl]`: the file a live run writes it to, and whether the simulator
/// models it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysctlKey {
    pub key: &'static str,
    /// The file a live run writes the value to; `None` for `read_ahead_kb`, each block
    /// queue's own attribute, which a live run leaves as it is (and refuses the key).
    pub file: Option<&'static str>,
    /// Why the simulator does not model the key, if it does not: a scenario that sets one is
    /// refused by the simulator rather than run without it.
    pub unmodelled: Option<&'static str>,
}

/// Each `[sysctl]` key once: `key: type = kernel default, file, unmodelled reason, |value|
/// range check => what was expected;`. The order is the section's order in a resolved
/// scenario's TOML and `reclaimlab live check`'s.
macro_rules! sysctl_table {
    ($(
        $(#[doc = $doc:literal])*
        $key:ident: $ty:ty = $default:expr,
            file $file:expr,
            unmodelled $unmodelled:expr,
            valid |$v:ident| $check:expr => $expected:literal;
    )*) => {
        /// The sysctls the simulated kernel runs with: the scenario's `[sysctl]` where it
        /// sets a key, the kernel's own value otherwise (`SysctlSettings::effective`).
        #[derive(Clone, Debug, PartialEq)]
        pub struct Sysctl {
            $( $(#[doc = $doc])* pub $key: $ty, )*
        }

        impl Default for Sysctl {
            fn default() -> Self {
                Sysctl { $( $key: $default, )* }
            }
        }

        /// The `[sysctl]` table, one for both backends: a key that is set is applied
        /// (written to /proc/sys by a live run, used by the simulated kernel); a key left out
        /// is the kernel's own value (left as the machine has it by a live run, the kernel's
        /// default in the simulator).
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct SysctlSettings {
            $(
                $(#[doc = $doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $key: Option<$ty>,
            )*
        }

        impl SysctlSettings {
            /// The range of each key the table sets: the first out of range.
            pub fn validate(&self) -> Result<(), Invalid> {
                $(
                    if let Some($v) = self.$key {
                        if !$check {
                            return Invalid::err(stringify!($key), $expected);
                        }
                    }
                )*
                Ok(())
            }

            /// The values the simulated kernel runs with.
            pub fn effective(&self) -> Sysctl {
                let d = Sysctl::default();
                Sysctl { $( $key: self.$key.unwrap_or(d.$key), )* }
            }
        }

        /// Every key of `SysctlSettings`, in the table's order; the live runner reads the
        /// files from here (`_core.machine.sysctl_files`).
        pub const SYSCTL_KEYS: &[SysctlKey] = &[
            $( SysctlKey { key: stringify!($key), file: $file, unmodelled: $unmodelled }, )*
        ];
    };
}

sysctl_table! {
    /// `vm.min_free_kbytes`; the kernel's default is computed at boot
    /// (`calculate_min_free_kbytes`), which `0` in `Sysctl` stands for.
    min_free_kbytes: u64 = 0,
        file Some("/proc/sys/vm/min_free_kbytes"),
        unmodelled None,
        valid |v| v > 0 => "expected a positive number of KiB (leave it out for the kernel's own)";
    /// `vm.watermark_scale_factor`: the gap between the watermarks, in 1/10000 of memory.
    watermark_scale_factor: u64 = 10,
        file Some("/proc/sys/vm/watermark_scale_factor"),
        unmodelled None,
        valid |v| (1..=3000).contains(&v) => "expected 1 to 3000";
    /// `vm.swappiness`: `get_scan_count()` balances anon against file with it (with swap
    /// space).
    swappiness: u32 = 60,
        file Some("/proc/sys/vm/swappiness"),
        unmodelled None,
        valid |v| v <= 200 => "expected 0 to 200";
    /// The block devices' readahead window (`/sys/block/*/queue/read_ahead_kb`), each
    /// queue's own attribute.
    read_ahead_kb: u64 = 128,
        file None,
        unmodelled None,
        valid |v| v >= 4 => "expected at least 4";
    /// `vm.watermark_boost_factor` (5.0+): how far a fallback may boost a zone's
    /// watermarks, in 1/10000 of its high watermark (`boost_watermark`); 0 turns boosting
    /// off. The kernels before 5.0 have no boosting: their fallbacks behave as with 0.
    watermark_boost_factor: u64 = 15_000,
        file Some("/proc/sys/vm/watermark_boost_factor"),
        unmodelled None,
        valid |v| v <= i32::MAX as u64 => "expected 0 to 2147483647";
    /// `vm.dirty_ratio`: the dirty limit, in percent of dirtyable memory
    /// (mm/page_writeback.rs).
    dirty_ratio: u32 = 20,
        file Some("/proc/sys/vm/dirty_ratio"),
        unmodelled None,
        valid |v| v <= 100 => "expected 0 to 100";
    /// `vm.dirty_background_ratio`: where the flushers start background writeback.
    dirty_background_ratio: u32 = 10,
        file Some("/proc/sys/vm/dirty_background_ratio"),
        unmodelled None,
        valid |v| v <= 100 => "expected 0 to 100";
    /// `vm.dirty_bytes`: the dirty limit in bytes, instead of `dirty_ratio` when not 0.
    dirty_bytes: u64 = 0,
        file Some("/proc/sys/vm/dirty_bytes"),
        unmodelled None,
        valid |v| v == 0 || v >= 2 * 4096 => "expected 0 or at least 8192 (two pages)";
    /// `vm.dirty_background_bytes`: instead of `dirty_background_ratio` when not 0.
    dirty_background_bytes: u64 = 0,
        file Some("/proc/sys/vm/dirty_background_bytes"),
        unmodelled None,
        valid |_v| true => "";
    /// `vm.dirty_expire_centisecs`: kupdate writes pages dirty for longer than this.
    dirty_expire_centisecs: u32 = 3000,
        file Some("/proc/sys/vm/dirty_expire_centisecs"),
        unmodelled None,
        valid |_v| true => "";
    /// `vm.dirty_writeback_centisecs`: the kupdate period (0: no periodic writeback).
    dirty_writeback_centisecs: u32 = 500,
        file Some("/proc/sys/vm/dirty_writeback_centisecs"),
        unmodelled None,
        valid |_v| true => "";
    /// `vm.page_cluster`: swap readahead reads at most 2^page_cluster pages.
    page_cluster: u32 = 3,
        file Some("/proc/sys/vm/page-cluster"),
        unmodelled None,
        valid |v| v <= 10 => "expected 0 to 10";
    /// /sys/kernel/mm/swap/vma_ra_enabled.
    vma_ra_enabled: bool = true,
        file Some("/sys/kernel/mm/swap/vma_ra_enabled"),
        unmodelled None,
        valid |_v| true => "";
    /// /sys/kernel/mm/transparent_hugepage/enabled: which anonymous faults may map a huge
    /// page (`mm::huge_memory`). Default `madvise` (CONFIG_TRANSPARENT_HUGEPAGE_MADVISE, the
    /// distributions' choice): only VMAs madvised MADV_HUGEPAGE, which no workload of the
    /// model's makes, so that no fault maps one unless a scenario says `always`.
    transparent_hugepage: ThpEnabled = ThpEnabled::Madvise,
        file Some("/sys/kernel/mm/transparent_hugepage/enabled"),
        unmodelled None,
        valid |_v| true => "";
    /// /sys/kernel/mm/transparent_hugepage/defrag: how hard a huge-page fault's allocation
    /// tries (`vma_thp_gfp_mask`). The kernel's default, `madvise`.
    transparent_hugepage_defrag: ThpDefrag = ThpDefrag::Madvise,
        file Some("/sys/kernel/mm/transparent_hugepage/defrag"),
        unmodelled None,
        valid |_v| true => "";
    /// `vm.zone_reclaim_mode` (`node_reclaim_mode`): RECLAIM_ZONE (1) reclaims a zone's own
    /// node before the allocator goes to a farther one (`node_reclaim()`, mm/vmscan.rs),
    /// RECLAIM_WRITE (2) lets that reclaim write dirty pages, RECLAIM_UNMAP (4) lets it
    /// unmap mapped ones. 0, the default: remote nodes at once.
    zone_reclaim_mode: u32 = 0,
        file Some("/proc/sys/vm/zone_reclaim_mode"),
        unmodelled None,
        valid |v| v <= 7 => "expected 0 to 7 (RECLAIM_ZONE 1 | RECLAIM_WRITE 2 | RECLAIM_UNMAP 4)";
    /// `vm.min_unmapped_ratio`: node reclaim leaves a node alone while its reclaimable
    /// page-cache pages are no more than this percent of its pages (`min_unmapped_pages`).
    min_unmapped_ratio: u32 = 1,
        file Some("/proc/sys/vm/min_unmapped_ratio"),
        unmodelled None,
        valid |v| v <= 100 => "expected 0 to 100";
}

/// The values of /sys/kernel/mm/transparent_hugepage/enabled (the file prints them all, the
/// current one in brackets: `always [madvise] never`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpEnabled {
    Always,
    Madvise,
    Never,
}

/// The values of /sys/kernel/mm/transparent_hugepage/defrag (TRANSPARENT_HUGEPAGE_DEFRAG_*
/// flags: `always` DIRECT, `defer` KSWAPD, `defer+madvise` KSWAPD_OR_MADV, `madvise`
/// REQ_MADV, `never` none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThpDefrag {
    #[serde(rename = "always")]
    Always,
    #[serde(rename = "defer")]
    Defer,
    #[serde(rename = "defer+madvise")]
    DeferMadvise,
    #[serde(rename = "madvise")]
    Madvise,
    #[serde(rename = "never")]
    Never,
}

impl SysctlSettings {
    pub fn is_empty(&self) -> bool {
        toml::Table::try_from(self).is_ok_and(|t| t.is_empty())
    }

    /// These settings, each unset key taken from `machine`'s.
    pub fn over(&self, machine: &SysctlSettings) -> SysctlSettings {
        let mut table = toml::Table::try_from(machine).unwrap_or_default();
        table.extend(toml::Table::try_from(self).unwrap_or_default());
        table.try_into().unwrap_or_else(|_| self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SysctlSettings`'s fields, from serde's refusal of a key it does not have.
    fn sysctl_fields() -> Vec<String> {
        let e = toml::from_str::<SysctlSettings>("none_such = 1").unwrap_err();
        let message = e.message().to_string();
        let (_, list) = message.split_once("expected one of ").expect("the fields");
        list.split(", ")
            .map(|f| f.trim_matches('`').to_string())
            .collect()
    }

    #[test]
    fn sysctl_keys_are_the_settings_fields_in_order() {
        let fields = sysctl_fields();
        let keys: Vec<String> = SYSCTL_KEYS.iter().map(|k| k.key.to_string()).collect();
        assert_eq!(fields.len(), 17, "{fields:?}");
        assert_eq!(fields, keys);
    }

    #[test]
    fn each_key_checks_its_own_range() {
        let bad = |text: &str| {
            toml::from_str::<SysctlSettings>(text)
                .unwrap()
                .validate()
                .unwrap_err()
        };
        assert_eq!(bad("swappiness = 201").key, "swappiness");
        assert_eq!(bad("min_free_kbytes = 0").key, "min_free_kbytes");
        let e = bad("watermark_scale_factor = 0");
        assert_eq!(
            (e.key.as_str(), e.message.as_str()),
            ("watermark_scale_factor", "expected 1 to 3000")
        );
        assert_eq!(bad("page_cluster = 11").message, "expected 0 to 10");
        assert_eq!(bad("read_ahead_kb = 3").key, "read_ahead_kb");
        let ok = "swappiness = 200\nwatermark_scale_factor = 3000\npage_cluster = 0";
        assert_eq!(
            toml::from_str::<SysctlSettings>(ok).unwrap().validate(),
            Ok(())
        );
    }

    #[test]
    fn an_unset_key_is_the_kernels_default() {
        let s: SysctlSettings = toml::from_str("swappiness = 100").unwrap();
        let e = s.effective();
        assert_eq!(e.swappiness, 100);
        assert_eq!(e.watermark_scale_factor, 10);
        assert_eq!(e.page_cluster, 3);
        assert!(e.vma_ra_enabled);
        assert_eq!(e.transparent_hugepage, ThpEnabled::Madvise);
        assert_eq!(e.transparent_hugepage_defrag, ThpDefrag::Madvise);
    }

    #[test]
    fn thp_settings_read_the_sysfs_files_words() {
        let s: SysctlSettings = toml::from_str(
            "transparent_hugepage = \"always\"\ntransparent_hugepage_defrag = \"defer+madvise\"",
        )
        .unwrap();
        let e = s.effective();
        assert_eq!(e.transparent_hugepage, ThpEnabled::Always);
        assert_eq!(e.transparent_hugepage_defrag, ThpDefrag::DeferMadvise);
        let bad = toml::from_str::<SysctlSettings>("transparent_hugepage = \"sometimes\"");
        assert!(bad.unwrap_err().message().contains("always"));
        let file = SYSCTL_KEYS
            .iter()
            .find(|k| k.key == "transparent_hugepage_defrag");
        assert_eq!(
            file.unwrap().file,
            Some("/sys/kernel/mm/transparent_hugepage/defrag")
        );
    }
}
