//! GFP flags (include/linux/gfp_types.h, 6.x bit order), the masks built from them,
//! `gfp_zone()`, and `show_gfp_flags()` as tracepoints print them
//! (include/trace/events/mmflags.h).

use super::zone::{ZONE_DMA, ZONE_DMA32, ZONE_MOVABLE, ZONE_NORMAL};

/// A `gfp_t`.
pub type Gfp = u32;

pub const __GFP_DMA: Gfp = 1 << 0;
pub const __GFP_HIGHMEM: Gfp = 1 << 1;
pub const __GFP_DMA32: Gfp = 1 << 2;
pub const __GFP_MOVABLE: Gfp = 1 << 3;
pub const __GFP_RECLAIMABLE: Gfp = 1 << 4;
pub const __GFP_HIGH: Gfp = 1 << 5;
pub const __GFP_IO: Gfp = 1 << 6;
pub const __GFP_FS: Gfp = 1 << 7;
pub const __GFP_ZERO: Gfp = 1 << 8;
pub const __GFP_DIRECT_RECLAIM: Gfp = 1 << 10;
pub const __GFP_KSWAPD_RECLAIM: Gfp = 1 << 11;
pub const __GFP_WRITE: Gfp = 1 << 12;
pub const __GFP_NOWARN: Gfp = 1 << 13;
pub const __GFP_RETRY_MAYFAIL: Gfp = 1 << 14;
pub const __GFP_NOFAIL: Gfp = 1 << 15;
pub const __GFP_NORETRY: Gfp = 1 << 16;
pub const __GFP_MEMALLOC: Gfp = 1 << 17;
pub const __GFP_COMP: Gfp = 1 << 18;
pub const __GFP_NOMEMALLOC: Gfp = 1 << 19;
pub const __GFP_HARDWALL: Gfp = 1 << 20;
pub const __GFP_THISNODE: Gfp = 1 << 21;
pub const __GFP_ACCOUNT: Gfp = 1 << 22;

pub const __GFP_RECLAIM: Gfp = __GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM;
pub const GFP_ATOMIC: Gfp = __GFP_HIGH | __GFP_KSWAPD_RECLAIM;
pub const GFP_KERNEL: Gfp = __GFP_RECLAIM | __GFP_IO | __GFP_FS;
pub const GFP_KERNEL_ACCOUNT: Gfp = GFP_KERNEL | __GFP_ACCOUNT;
pub const GFP_NOWAIT: Gfp = __GFP_KSWAPD_RECLAIM;
pub const GFP_NOIO: Gfp = __GFP_RECLAIM;
pub const GFP_NOFS: Gfp = __GFP_RECLAIM | __GFP_IO;
pub const GFP_USER: Gfp = __GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HARDWALL;
pub const GFP_DMA: Gfp = __GFP_DMA;
pub const GFP_DMA32: Gfp = __GFP_DMA32;
pub const GFP_HIGHUSER: Gfp = GFP_USER | __GFP_HIGHMEM;
pub const GFP_HIGHUSER_MOVABLE: Gfp = GFP_HIGHUSER | __GFP_MOVABLE;
pub const GFP_TRANSHUGE_LIGHT: Gfp =
    (GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOMEMALLOC | __GFP_NOWARN) & !__GFP_RECLAIM;
pub const GFP_TRANSHUGE: Gfp = GFP_TRANSHUGE_LIGHT | __GFP_DIRECT_RECLAIM;

/// `gfp_zone()` on a 64-bit machine with ZONE_MOVABLE and no highmem: the highest zone an
/// allocation may use. `__GFP_HIGHMEM` alone means ZONE_NORMAL; with `__GFP_MOVABLE` it
/// means ZONE_MOVABLE.
pub fn gfp_zone(gfp: Gfp) -> usize {
    if gfp & __GFP_DMA != 0 {
        ZONE_DMA
    } else if gfp & __GFP_DMA32 != 0 {
        ZONE_DMA32
    } else if gfp & (__GFP_HIGHMEM | __GFP_MOVABLE) == __GFP_HIGHMEM | __GFP_MOVABLE {
        ZONE_MOVABLE
    } else {
        ZONE_NORMAL
    }
}

/// `__def_gfpflag_names`: masks first, then single flags, in the order `__print_flags`
/// tries them (each match is printed and its bits cleared).
const GFP_NAMES: &[(Gfp, &str)] = &[
    (GFP_TRANSHUGE, "GFP_TRANSHUGE"),
    (GFP_TRANSHUGE_LIGHT, "GFP_TRANSHUGE_LIGHT"),
    (GFP_HIGHUSER_MOVABLE, "GFP_HIGHUSER_MOVABLE"),
    (GFP_HIGHUSER, "GFP_HIGHUSER"),
    (GFP_USER, "GFP_USER"),
    (GFP_KERNEL_ACCOUNT, "GFP_KERNEL_ACCOUNT"),
    (GFP_KERNEL, "GFP_KERNEL"),
    (GFP_NOFS, "GFP_NOFS"),
    (GFP_ATOMIC, "GFP_ATOMIC"),
    (GFP_NOIO, "GFP_NOIO"),
    (GFP_NOWAIT, "GFP_NOWAIT"),
    (GFP_DMA, "GFP_DMA"),
    (__GFP_HIGHMEM, "__GFP_HIGHMEM"),
    (GFP_DMA32, "GFP_DMA32"),
    (__GFP_HIGH, "__GFP_HIGH"),
    (__GFP_IO, "__GFP_IO"),
    (__GFP_FS, "__GFP_FS"),
    (__GFP_NOWARN, "__GFP_NOWARN"),
    (__GFP_RETRY_MAYFAIL, "__GFP_RETRY_MAYFAIL"),
    (__GFP_NOFAIL, "__GFP_NOFAIL"),
    (__GFP_NORETRY, "__GFP_NORETRY"),
    (__GFP_COMP, "__GFP_COMP"),
    (__GFP_ZERO, "__GFP_ZERO"),
    (__GFP_NOMEMALLOC, "__GFP_NOMEMALLOC"),
    (__GFP_MEMALLOC, "__GFP_MEMALLOC"),
    (__GFP_HARDWALL, "__GFP_HARDWALL"),
    (__GFP_THISNODE, "__GFP_THISNODE"),
    (__GFP_RECLAIMABLE, "__GFP_RECLAIMABLE"),
    (__GFP_MOVABLE, "__GFP_MOVABLE"),
    (__GFP_ACCOUNT, "__GFP_ACCOUNT"),
    (__GFP_WRITE, "__GFP_WRITE"),
    (__GFP_RECLAIM, "__GFP_RECLAIM"),
    (__GFP_DIRECT_RECLAIM, "__GFP_DIRECT_RECLAIM"),
    (__GFP_KSWAPD_RECLAIM, "__GFP_KSWAPD_RECLAIM"),
];

/// `show_gfp_flags()`: `A|B|…`, or `none` for 0; unnamed bits print as hex.
pub fn show_gfp_flags(gfp: Gfp) -> String {
    if gfp == 0 {
        return "none".into();
    }
    let mut left = gfp;
    let mut names: Vec<String> = Vec::new();
    for &(mask, name) in GFP_NAMES {
        if left & mask == mask {
            names.push(name.into());
            left &= !mask;
        }
    }
    if left != 0 {
        names.push(format!("{left:#x}"));
    }
    names.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_cache_allocations_may_use_every_zone() {
        assert_eq!(gfp_zone(GFP_HIGHUSER_MOVABLE), ZONE_MOVABLE);
        assert_eq!(gfp_zone(GFP_KERNEL), ZONE_NORMAL);
        assert_eq!(gfp_zone(GFP_HIGHUSER), ZONE_NORMAL);
        assert_eq!(gfp_zone(GFP_KERNEL | __GFP_DMA32), ZONE_DMA32);
    }

    #[test]
    fn masks_print_as_the_kernel_names_them() {
        assert_eq!(show_gfp_flags(GFP_HIGHUSER_MOVABLE), "GFP_HIGHUSER_MOVABLE");
        assert_eq!(
            show_gfp_flags(GFP_HIGHUSER_MOVABLE | __GFP_NORETRY | __GFP_NOWARN),
            "GFP_HIGHUSER_MOVABLE|__GFP_NOWARN|__GFP_NORETRY"
        );
        assert_eq!(show_gfp_flags(GFP_KERNEL), "GFP_KERNEL");
        assert_eq!(show_gfp_flags(GFP_NOFS), "GFP_NOFS");
        assert_eq!(show_gfp_flags(GFP_TRANSHUGE_LIGHT), "GFP_TRANSHUGE_LIGHT");
        assert_eq!(show_gfp_flags(0), "none");
        assert_eq!(show_gfp_flags(1 << 30), "0x40000000");
    }
}
