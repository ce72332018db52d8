//! Per-page fields that only some scenarios need, in side arrays beside the 16-byte page
//! descriptor (the kernel keeps them in `struct folio` itself, or in `page_ext`). An array is
//! allocated when a scenario first needs its field, so a page-cache scenario pays nothing for
//! anonymous memory, swap or memory cgroups:
//!
//! | field | kernel | bytes per page |
//! |---|---|---|
//! | `index` | `folio->index`, the page's offset in its mapping | 4 |
//! | `swap` | `folio->swap`, the swap entry of a swap-cache folio | 4 |
//! | `mapcount` | `folio->_mapcount`, page tables mapping it | 2 |
//! | `memcg` | `folio_memcg()`, the memory cgroup it is charged to | 2 |

use super::mem_cgroup::ROOT_MEM_CGROUP;

/// A side array: absent until enabled.
type Field<T> = Option<Box<[T]>>;

pub struct PageExt {
    nr_pages: u32,
    pub index: Field<u32>,
    pub swap: Field<u32>,
    pub mapcount: Field<u16>,
    pub memcg: Field<u16>,
}

fn enable<T: Copy>(field: &mut Field<T>, nr_pages: u32, init: T) -> &mut [T] {
    field.get_or_insert_with(|| vec![init; nr_pages as usize].into_boxed_slice())
}

impl PageExt {
    pub fn new(nr_pages: u32) -> PageExt {
        PageExt {
            nr_pages,
            index: None,
            swap: None,
            mapcount: None,
            memcg: None,
        }
    }

    /// The `index` array, allocated (all 0) on first use.
    pub fn index_mut(&mut self) -> &mut [u32] {
        enable(&mut self.index, self.nr_pages, 0)
    }

    /// The `swap` array, allocated (all 0: no entry) on first use.
    pub fn swap_mut(&mut self) -> &mut [u32] {
        enable(&mut self.swap, self.nr_pages, 0)
    }

    /// The `mapcount` array, allocated (all 0: unmapped) on first use.
    pub fn mapcount_mut(&mut self) -> &mut [u16] {
        enable(&mut self.mapcount, self.nr_pages, 0)
    }

    /// The `memcg` array, allocated (every page in the root cgroup) on first use.
    pub fn memcg_mut(&mut self) -> &mut [u16] {
        enable(&mut self.memcg, self.nr_pages, ROOT_MEM_CGROUP)
    }

    /// Ask the CPU to load page `p`'s `index` ahead of use (as [`super::page::Pages::prefetch`]
    /// for its descriptor), if the array exists. A hint only: no result depends on it.
    #[inline(always)]
    pub fn prefetch_index(&self, p: u32) {
        if let Some(x) = self.index.as_ref().and_then(|a| a.get(p as usize)) {
            super::page::prefetch_line(x);
        }
    }

    /// `folio_memcg()`: the cgroup page `p` is charged to (the root while no cgroup exists).
    #[inline]
    pub fn folio_memcg(&self, p: u32) -> u16 {
        self.memcg
            .as_ref()
            .map_or(ROOT_MEM_CGROUP, |m| m[p as usize])
    }

    /// Bytes of the arrays of `nr_pages` pages a run may come to: `swap` where it has swap
    /// areas, `memcg` where it has a memory cgroup, `index` where a file of known size is
    /// read or mapped (no modelled path uses `mapcount` yet; tests/capacity.rs fails if one starts to
    /// without this counting it).
    pub fn state_bytes_for(nr_pages: u32, swap: bool, memcg: bool, index: bool) -> u64 {
        let per_page = |on: bool, bytes: u64| if on { bytes } else { 0 };
        u64::from(nr_pages) * (per_page(swap, 4) + per_page(memcg, 2) + per_page(index, 4))
    }

    /// Bytes of the arrays allocated so far.
    pub fn state_bytes(&self) -> u64 {
        let bytes = |n: Option<usize>, size: usize| (n.unwrap_or(0) * size) as u64;
        bytes(self.index.as_ref().map(|a| a.len()), 4)
            + bytes(self.swap.as_ref().map(|a| a.len()), 4)
            + bytes(self.mapcount.as_ref().map(|a| a.len()), 2)
            + bytes(self.memcg.as_ref().map(|a| a.len()), 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_cost_nothing_until_used() {
        let mut e = PageExt::new(1000);
        assert_eq!(e.state_bytes(), 0);
        assert_eq!(e.folio_memcg(7), ROOT_MEM_CGROUP);
        e.memcg_mut()[7] = 3;
        assert_eq!(e.folio_memcg(7), 3);
        assert_eq!(e.state_bytes(), 2000);
        e.index_mut()[1] = 42;
        e.swap_mut();
        e.mapcount_mut();
        assert_eq!(e.state_bytes(), 1000 * (2 + 4 + 4 + 2));
        assert_eq!(e.index.as_ref().unwrap()[1], 42);
    }
}
