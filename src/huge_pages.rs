//! The process's allocator: the system's, with every large block asking the kernel for
//! transparent huge pages (`madvise(MADV_HUGEPAGE)`).
//!
//! A command's big columns (positions, ids, travelling records, receive buffers) are fresh
//! memory written once: with 4 KiB pages every page is a fault that zeroes it. Where the
//! kernel's transparent huge pages are `madvise` (a common default, and the GPU host's), those
//! faults were a large part of the stages that write fresh memory: `mpirun -n 2 haloscope fof`
//! on 4×10⁸ particles took 6.6-7.3 s after the read and 5.4-5.8 s with this, one process on
//! two devices 1.18-1.61 s and 1.10-1.16 s (BENCHMARKS.md). glibc's own switch for this
//! (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`) is read at start-up, so a program cannot turn it
//! on for itself. Small blocks are left alone: they share the heap's pages with others, and a
//! huge page for them would only cost memory.

use std::alloc::{GlobalAlloc, Layout, System};

/// The smallest block that gets huge pages: glibc serves blocks this large (its largest
/// `mmap` threshold) from a mapping of their own, so the advice covers no other block.
pub const HUGE_PAGE_BLOCK: usize = 32 << 20;

/// [`System`], with huge pages asked for every block of [`HUGE_PAGE_BLOCK`] bytes or more.
pub struct HugePagesForLargeBlocks;

// SAFETY: every block comes from `System` and goes back to it with the same layout; the advice
// changes how the kernel backs the block's pages, not their contents.
unsafe impl GlobalAlloc for HugePagesForLargeBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let block = unsafe { System.alloc(layout) };
        advise_huge_pages(block, layout.size());
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`. A fresh mapping is zero without being touched, so the advice
        // comes before any page is faulted in.
        let block = unsafe { System.alloc_zeroed(layout) };
        advise_huge_pages(block, layout.size());
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        advise_huge_pages(moved, new_size);
        moved
    }
}

/// Asks for huge pages over the `len` bytes at `block` when the block is large. Advice only: a
/// kernel without transparent huge pages refuses it, one with them off ignores it, and the
/// block is as it was.
#[cfg(target_os = "linux")]
fn advise_huge_pages(block: *mut u8, len: usize) {
    if block.is_null() || len < HUGE_PAGE_BLOCK {
        return;
    }
    // madvise takes a page-aligned start: the block's first page, which its own mapping holds.
    const PAGE: usize = 4096;
    let start = block as usize & !(PAGE - 1);
    let end = block as usize + len;
    // SAFETY: the range lies within the block's mapping; MADV_HUGEPAGE does not change the
    // memory's contents, and its result is ignored (advice).
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_block: *mut u8, _len: usize) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Whether the kernel marked the mapping holding `address` for huge pages (`hg` among its
    /// VmFlags in /proc/self/smaps).
    fn marked_huge(address: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&address);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.split_whitespace().any(|f| f == "hg"));
            }
        }
        None
    }

    /// Whether this kernel has transparent huge pages at all (whatever their mode, the advice
    /// marks the mapping).
    fn thp_enabled() -> bool {
        std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
    }

    #[test]
    fn large_blocks_are_marked_for_huge_pages_and_small_ones_are_not() {
        let allocator = HugePagesForLargeBlocks;
        let large = Layout::from_size_align(HUGE_PAGE_BLOCK * 2, 8).unwrap();
        let small = Layout::from_size_align(1 << 20, 8).unwrap();
        // SAFETY: blocks allocated and freed with their own layouts, written within bounds.
        unsafe {
            let block = allocator.alloc_zeroed(large);
            assert!(!block.is_null());
            let middle = block as usize + HUGE_PAGE_BLOCK;
            *block.add(HUGE_PAGE_BLOCK) = 7;
            assert_eq!(*block.add(HUGE_PAGE_BLOCK + 1), 0);
            if thp_enabled() {
                assert_eq!(marked_huge(middle), Some(true));
            }
            let grown = allocator.realloc(block, large, HUGE_PAGE_BLOCK * 3);
            assert_eq!(*grown.add(HUGE_PAGE_BLOCK), 7);
            if thp_enabled() {
                assert_eq!(
                    marked_huge(grown as usize + HUGE_PAGE_BLOCK * 2),
                    Some(true)
                );
            }
            allocator.dealloc(
                grown,
                Layout::from_size_align(HUGE_PAGE_BLOCK * 3, 8).unwrap(),
            );

            let block = allocator.alloc(small);
            assert!(!block.is_null());
            *block = 1;
            assert_ne!(marked_huge(block as usize), Some(true));
            allocator.dealloc(block, small);
        }
    }
}
