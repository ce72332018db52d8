//! Page descriptors in one flat array (the model's `struct page` / folio), and the intrusive
//! doubly linked lists threaded through them. A page is on at most one list at a time — an
//! LRU list or a buddy free list — so the two share the `next`/`prev` links, as `page->lru`
//! does in the kernel. Budget: 16 bytes per page.

/// Folio flags, with the kernel's names. Only the flags the model sets are defined.
pub mod pg {
    pub const LRU: u16 = 1 << 0;
    pub const ACTIVE: u16 = 1 << 1;
    pub const REFERENCED: u16 = 1 << 2;
    /// PG_swapbacked on an anonymous folio (`folio_test_anon`): its owner is the page-table
    /// entry that maps it (`pg::MAPPED`) or, unmapped, its swap slot (`pg::SWAPCACHE`).
    pub const ANON: u16 = 1 << 3;
    /// PG_swapcache: the folio is in the swap cache, at its swap slot.
    pub const SWAPCACHE: u16 = 1 << 4;
    /// PG_dirty: its data is newer than its backing store's (swap, for anon).
    pub const DIRTY: u16 = 1 << 5;
    /// PG_writeback: its write to swap is in flight.
    pub const WRITEBACK: u16 = 1 << 6;
    /// PG_reclaim: reclaim wrote it; its write's completion moves it to the inactive tail.
    pub const RECLAIM: u16 = 1 << 7;
    /// Mapped by a page-table entry (`folio_mapped`; anon folios are mapped once, no fork).
    pub const MAPPED: u16 = 1 << 11;
    /// PG_readahead: read by swap readahead and not yet found by a fault.
    pub const READAHEAD: u16 = 1 << 13;
    pub const WORKINGSET: u16 = 1 << 8;
    /// PageBuddy: free, on a buddy list of order `PageDesc::order`.
    pub const BUDDY: u16 = 1 << 9;
    /// Locked while its read is in flight; reclaim's trylock fails on it.
    pub const LOCKED: u16 = 1 << 10;
    /// PG_uptodate: its data has been read.
    pub const UPTODATE: u16 = 1 << 12;
    /// PageTail: a page of a large folio other than its first (`compound_head` is the
    /// folio's head, whose `PageDesc::order` is the folio's order). A tail page is on no
    /// list, is neither free nor a folio of its own, and carries no other flag; `owner`
    /// holds the head's pfn (mm/page_alloc.rs `prep_compound_folio`).
    pub const TAIL: u16 = 1 << 14;
    /// PG_slab, standing for all the kernel's own memory a machine starts with (slab, page
    /// tables, boot allocations: `mm::boot_memory`): in use for the whole run, on no list,
    /// never reclaimed, migrated or freed.
    pub const SLAB: u16 = 1 << 15;
}

/// `folio_nr_pages()`: the pages of the folio whose head has fields `f` (`1 << order`).
#[inline(always)]
pub fn folio_nr_pages(f: &PageFields) -> u64 {
    1u64 << f.order
}

/// What a page is, apart from its list links: the fields the rest of the model reads and
/// writes. `lru` is the list the page is on (an `LruList` index) while `pg::LRU` is set.
/// `order` is a free block's order on a buddy list (`pg::BUDDY`) and, on an allocated
/// folio's head, the folio's order (`folio_order()`; 0 for the order-0 folios that are all
/// the model had before large page-cache folios).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct PageFields {
    /// The mapping (page cache file or anon owner) the page belongs to; `NO_OWNER` if free.
    pub owner: u32,
    pub flags: u16,
    pub order: u8,
    pub lru: u8,
}

/// One page: its fields and the `next`/`prev` links of the list it is on. The links are
/// private to this module, so every link ever stored is an index [`Pages`] checked.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct PageDesc {
    next: u32,
    prev: u32,
    f: PageFields,
}

pub const NO_OWNER: u32 = u32::MAX;
/// How many pages ahead a loop over known page numbers asks for a descriptor
/// ([`Pages::prefetch`]): enough to cover a miss's latency with a few pages' work.
pub const PREFETCH_AHEAD: usize = 8;
const _: () = assert!(std::mem::size_of::<PageDesc>() == 16);

/// Ask the CPU to load the cache line at `x` ahead of use: the one place the model's
/// software prefetches are issued. A hint only: it has no architectural effect, whatever
/// the address, and no result depends on it.
#[inline(always)]
pub fn prefetch_line<T>(x: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch neither faults nor changes memory, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(x.cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// A list head of a [`Pages`]: an LRU list or a buddy free list, made by [`Pages::list`].
/// It holds the sentinel's index in that array's descriptors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListId(u32);

/// All page descriptors, followed by the list-head sentinels.
///
/// The list operations index the array with links read from it without a bounds check.
/// That is sound because the array never changes length and nothing outside this module can
/// write a link: every `next`/`prev` is set from a page index or list head checked against
/// the array (the arguments of [`Pages::add_head`] and its siblings; list heads in
/// [`Pages::head`], once per call, not per page) or from another link. Debug builds check
/// every access anyway.
pub struct Pages {
    desc: Box<[PageDesc]>,
    nr_pages: u32,
}

impl Pages {
    /// `nr_pages` page frames and `nr_lists` list heads (sentinel descriptors after the pages).
    pub fn new(nr_pages: u32, nr_lists: u32) -> Pages {
        let mut desc = vec![
            PageDesc {
                next: 0,
                prev: 0,
                f: PageFields {
                    owner: NO_OWNER,
                    ..Default::default()
                },
            };
            (nr_pages + nr_lists) as usize
        ]
        .into_boxed_slice();
        for l in 0..nr_lists {
            let h = nr_pages + l;
            desc[h as usize].next = h;
            desc[h as usize].prev = h;
        }
        Pages { desc, nr_pages }
    }

    /// Add `n` list heads after the existing ones (set-up only: the array is copied);
    /// returns the first new list's number for [`Pages::list`]. Links stay valid, as pages
    /// and existing heads keep their indices.
    pub fn add_lists(&mut self, n: u32) -> u32 {
        let first = self.desc.len() as u32 - self.nr_pages;
        let mut desc = std::mem::take(&mut self.desc).into_vec();
        for _ in 0..n {
            let h = desc.len() as u32;
            desc.push(PageDesc {
                next: h,
                prev: h,
                f: PageFields {
                    owner: NO_OWNER,
                    ..Default::default()
                },
            });
        }
        self.desc = desc.into_boxed_slice();
        first
    }

    pub fn nr_pages(&self) -> u32 {
        self.nr_pages
    }

    /// Bytes of descriptor state (page frames and list heads).
    pub fn state_bytes(&self) -> u64 {
        Pages::state_bytes_for(self.desc.len() as u64)
    }

    /// Bytes of descriptor state of an array of `nr_descs` page frames and list heads.
    pub fn state_bytes_for(nr_descs: u64) -> u64 {
        nr_descs * std::mem::size_of::<PageDesc>() as u64
    }

    /// List `l` of the `nr_lists` this array was made with.
    pub fn list(&self, l: u32) -> ListId {
        let h = self.nr_pages as usize + l as usize;
        assert!(h < self.desc.len(), "list {l} out of range");
        ListId(h as u32)
    }

    /// The sentinel of list `l`. Checked against the array's end, which keeps a `ListId` of
    /// another, larger array from reaching past it; one of a smaller array would name a page
    /// here, which debug builds catch.
    #[inline]
    fn head(&self, l: ListId) -> u32 {
        assert!((l.0 as usize) < self.desc.len(), "list out of range");
        debug_assert!(l.0 >= self.nr_pages, "a list of another page array");
        l.0
    }

    /// The descriptor at a link: `i` was read from a link (or checked against the array by
    /// the caller), so it is in bounds (see [`Pages`]).
    #[inline(always)]
    fn at(&self, i: u32) -> &PageDesc {
        debug_assert!((i as usize) < self.desc.len());
        // SAFETY: links only ever hold indices checked against `desc`, whose length is fixed.
        unsafe { self.desc.get_unchecked(i as usize) }
    }

    #[inline(always)]
    fn at_mut(&mut self, i: u32) -> &mut PageDesc {
        debug_assert!((i as usize) < self.desc.len());
        // SAFETY: as for `at`.
        unsafe { self.desc.get_unchecked_mut(i as usize) }
    }

    /// Ask the CPU to load page `p`'s descriptor ahead of use. For loops over pages whose
    /// numbers are known in advance (a bio's pages, an inode's dirty pages): the pages of a
    /// loaded machine lie scattered over an array of gigabytes, and a load issued a few
    /// pages early overlaps the miss that the loop would otherwise wait for on each page.
    /// A hint only: no result depends on it; out-of-range numbers are ignored.
    #[inline(always)]
    pub fn prefetch(&self, p: u32) {
        if let Some(d) = self.desc.get(p as usize) {
            prefetch_line(d);
        }
    }

    /// [`Pages::prefetch`] of the first PREFETCH_AHEAD of `pages`: called before a loop
    /// over `pages` whose steps call [`Pages::prefetch_ahead`], which asks for the pages
    /// after these.
    #[inline(always)]
    pub fn prefetch_first(&self, pages: &[u32]) {
        for &p in pages.iter().take(PREFETCH_AHEAD) {
            self.prefetch(p);
        }
    }

    /// [`Pages::prefetch`] of `pages[k + PREFETCH_AHEAD]`, if there is one: called at step
    /// `k` of a loop over `pages`.
    #[inline(always)]
    pub fn prefetch_ahead(&self, pages: &[u32], k: usize) {
        if let Some(&p) = pages.get(k + PREFETCH_AHEAD) {
            self.prefetch(p);
        }
    }

    /// Page `p`'s fields.
    #[inline]
    pub fn fields(&self, p: u32) -> &PageFields {
        &self.desc[p as usize].f
    }

    #[inline]
    pub fn fields_mut(&mut self, p: u32) -> &mut PageFields {
        &mut self.desc[p as usize].f
    }

    #[inline]
    pub fn flags(&self, p: u32) -> u16 {
        self.desc[p as usize].f.flags
    }

    #[inline]
    pub fn set(&mut self, p: u32, f: u16) {
        self.desc[p as usize].f.flags |= f;
    }

    #[inline]
    pub fn clear(&mut self, p: u32, f: u16) {
        self.desc[p as usize].f.flags &= !f;
    }

    #[inline]
    pub fn test_and_clear(&mut self, p: u32, f: u16) -> bool {
        let d = &mut self.desc[p as usize].f;
        let was = d.flags & f != 0;
        d.flags &= !f;
        was
    }

    #[inline]
    pub fn is_empty(&self, l: ListId) -> bool {
        let h = self.head(l);
        self.at(h).next == h
    }

    /// `__list_add`: link `p` between the adjacent entries `prev` and `next`.
    #[inline]
    fn add_between(&mut self, p: u32, prev: u32, next: u32) {
        let d = &mut self.desc[p as usize];
        d.next = next;
        d.prev = prev;
        self.at_mut(next).prev = p;
        self.at_mut(prev).next = p;
    }

    /// `list_add`: insert `p` at the head of list `l`.
    #[inline]
    pub fn add_head(&mut self, l: ListId, p: u32) {
        let h = self.head(l);
        let first = self.at(h).next;
        self.add_between(p, h, first);
    }

    /// `list_add` of each page of `run` in turn, each page's fields first set to `f`: the list
    /// ends as that many [`Pages::add_head`] calls leave it (the run's last page first), with
    /// each link written once instead of through the head on every call.
    #[inline]
    pub fn add_head_run(&mut self, l: ListId, run: &[u32], f: PageFields) {
        let (Some(&oldest), Some(&newest)) = (run.first(), run.last()) else {
            return;
        };
        // Each link below names a page of `run` before that page's own write is checked, so
        // check them all first: a bad pfn must panic before it can reach a list.
        assert!(
            run.iter().all(|&p| p < self.nr_pages),
            "a page outside the array"
        );
        let h = self.head(l);
        let first = self.at(h).next;
        // Each page's prev is the page after it in `run`; the last page's is the head.
        let mut link = |p: u32, next: u32, prev: u32| {
            let d = &mut self.desc[p as usize];
            d.next = next;
            d.prev = prev;
            d.f = f;
        };
        let mut next = first;
        for pair in run.windows(2) {
            link(pair[0], next, pair[1]);
            next = pair[0];
        }
        link(newest, next, h);
        self.at_mut(first).prev = oldest;
        self.at_mut(h).next = newest;
    }

    /// `list_add_tail`: insert `p` at the tail of list `l`.
    #[inline]
    pub fn add_tail(&mut self, l: ListId, p: u32) {
        let h = self.head(l);
        let last = self.at(h).prev;
        self.add_between(p, last, h);
    }

    /// `list_del`: take `p` off the list it is on.
    #[inline]
    pub fn unlink(&mut self, p: u32) {
        let PageDesc { next, prev, .. } = self.desc[p as usize];
        self.at_mut(prev).next = next;
        self.at_mut(next).prev = prev;
    }

    /// The tail of list `l` (`lru_to_folio`), if any.
    #[inline]
    pub fn tail(&self, l: ListId) -> Option<u32> {
        let h = self.head(l);
        let t = self.at(h).prev;
        (t != h).then_some(t)
    }

    /// Walk list `l` from its tail towards the head, putting each page `take` accepts into
    /// `out` (oldest first) and clearing `clear` in its flags, until `out` is full, the list
    /// ends, or `take` refuses a page. Returns how many were taken and the refused page, if
    /// the walk stopped at one. The list's links are not changed: [`Pages::cut_tail`] takes
    /// the walked pages off.
    #[inline]
    pub fn walk_tail(
        &mut self,
        l: ListId,
        out: &mut [u32],
        clear: u16,
        mut take: impl FnMut(u32) -> bool,
    ) -> (usize, Option<u32>) {
        let h = self.head(l);
        let mut p = self.at(h).prev;
        for (n, slot) in out.iter_mut().enumerate() {
            if p == h {
                return (n, None);
            }
            if !take(p) {
                return (n, Some(p));
            }
            *slot = p;
            let d = self.at_mut(p);
            d.f.flags &= !clear;
            p = d.prev;
        }
        (out.len(), None)
    }

    /// Take `run`, the pages at the tail of list `l` from the tail up (as
    /// [`Pages::walk_tail`] found them), off the list in one cut. The list is left as one
    /// `unlink` of its tail per page leaves it; the taken pages' own links go stale, as
    /// `unlink` leaves them, until they join a list again.
    #[inline]
    pub fn cut_tail(&mut self, l: ListId, run: &[u32]) {
        let Some(&newest) = run.last() else {
            return;
        };
        debug_assert!({
            let mut q = self.head(l);
            run.iter().all(|&p| {
                q = self.at(q).prev;
                q == p
            })
        });
        let h = self.head(l);
        let new_tail = self.desc[newest as usize].prev;
        self.at_mut(h).prev = new_tail;
        self.at_mut(new_tail).next = h;
    }

    /// The first page of list `l`, if any.
    #[inline]
    pub fn first(&self, l: ListId) -> Option<u32> {
        let h = self.head(l);
        let f = self.at(h).next;
        (f != h).then_some(f)
    }

    /// The pages on list `l`, head first (tests and debug checks).
    pub fn iter(&self, l: ListId) -> impl Iterator<Item = u32> + '_ {
        let h = self.head(l);
        let mut p = self.at(h).next;
        std::iter::from_fn(move || {
            (p != h).then(|| {
                let cur = p;
                p = self.at(cur).next;
                cur
            })
        })
    }

    /// The pages on list `l`, tail first (`list_for_each_entry_reverse`).
    pub fn iter_rev(&self, l: ListId) -> impl Iterator<Item = u32> + '_ {
        let h = self.head(l);
        let mut p = self.at(h).prev;
        std::iter::from_fn(move || {
            (p != h).then(|| {
                let cur = p;
                p = self.at(cur).prev;
                cur
            })
        })
    }

    /// Count the pages on list `l` by walking it (tests and debug checks only).
    pub fn walk_len(&self, l: ListId) -> u64 {
        self.iter(l).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_order_and_links() {
        let mut p = Pages::new(8, 2);
        let (l0, l1) = (p.list(0), p.list(1));
        for i in 0..4 {
            p.add_head(l0, i);
        }
        p.add_tail(l0, 7);
        assert_eq!(p.tail(l0), Some(7));
        assert_eq!(p.first(l0), Some(3));
        p.unlink(7);
        assert_eq!(p.tail(l0), Some(0));
        assert_eq!(p.walk_len(l0), 4);
        assert!(p.is_empty(l1));
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_list_beyond_the_heads_is_refused() {
        Pages::new(8, 2).list(2);
    }

    #[test]
    #[should_panic(expected = "outside the array")]
    fn a_run_with_a_page_beyond_the_array_is_refused() {
        let mut p = Pages::new(8, 2);
        let l = p.list(0);
        p.add_head_run(l, &[1, 2, 8], PageFields::default());
    }

    /// List `l` walked tail first through the `prev` links.
    fn walk_back(p: &Pages, l: ListId) -> Vec<u32> {
        let h = p.head(l);
        let mut out = Vec::new();
        let mut q = p.desc[h as usize].prev;
        while q != h {
            out.push(q);
            q = p.desc[q as usize].prev;
        }
        out
    }

    use proptest::prelude::*;

    proptest! {
        /// Pages taken off the tail with one walk and one cut: the walk stops at the first
        /// page refused, and the lists (both ways round) and every page's flags are as one
        /// `unlink` of the tail per page leaves them.
        #[test]
        fn a_tail_cut_is_what_single_unlinks_give(
            order in Just((0u32..48).collect::<Vec<_>>()).prop_shuffle(),
            listed in 0usize..48,
            want in 0usize..40,
            refuse in proptest::collection::vec(any::<bool>(), 48),
        ) {
            let mut one = Pages::new(48, 2);
            let mut cut = Pages::new(48, 2);
            for (i, &q) in order.iter().enumerate() {
                let l = one.list(u32::from(i >= listed));
                for pages in [&mut one, &mut cut] {
                    pages.set(q, pg::LRU);
                    pages.add_head(l, q);
                }
            }
            let mut expect = Vec::new();
            let (l0, l1) = (one.list(0), one.list(1));
            while expect.len() < want {
                match one.tail(l0) {
                    Some(t) if !refuse[t as usize] => {
                        one.unlink(t);
                        one.clear(t, pg::LRU);
                        expect.push(t);
                    }
                    _ => break,
                }
            }
            let mut out = vec![0; want];
            let (n, refused) = cut.walk_tail(l0, &mut out, pg::LRU, |q| !refuse[q as usize]);
            cut.cut_tail(l0, &out[..n]);
            prop_assert_eq!(&out[..n], &expect[..]);
            prop_assert_eq!(refused, if n < want { one.tail(l0) } else { None });
            for l in [l0, l1] {
                prop_assert!(one.iter(l).eq(cut.iter(l)));
                prop_assert_eq!(walk_back(&one, l), walk_back(&cut, l));
            }
            for q in 0..48 {
                prop_assert_eq!(one.flags(q), cut.flags(q));
            }
        }

        /// A run added at once leaves the list, both ways round, and every page's fields as
        /// one `add_head` per page does, whatever the list held before.
        #[test]
        fn a_run_added_at_the_head_is_what_single_adds_give(
            order in Just((0u32..64).collect::<Vec<_>>()).prop_shuffle(),
            split in 0usize..64,
        ) {
            let split = split.min(order.len());
            let (before, run) = order.split_at(split);
            let f = PageFields { owner: 7, flags: pg::LRU | pg::LOCKED, order: 0, lru: 2 };
            let mut one = Pages::new(64, 1);
            let mut all = Pages::new(64, 1);
            let l = one.list(0);
            for &q in before {
                one.add_head(l, q);
                all.add_head(l, q);
            }
            for &q in run {
                *one.fields_mut(q) = f;
                one.add_head(l, q);
            }
            all.add_head_run(l, run, f);
            prop_assert!(one.iter(l).eq(all.iter(l)));
            prop_assert_eq!(walk_back(&one, l), walk_back(&all, l));
            for q in 0..64 {
                prop_assert_eq!(one.fields(q).owner, all.fields(q).owner);
                prop_assert_eq!(one.flags(q), all.flags(q));
                prop_assert_eq!(one.fields(q).lru, all.fields(q).lru);
            }
        }
    }
}
