//! How the process's allocator keeps freed memory: set once at start-up by the binaries and
//! benches that replay many sessions.
//!
//! A replay builds tables and vectors that grow with its prompts (a stream's per-token hashes
//! under `gemini`, a pool's blocks under `paged`) and frees them when it ends. glibc's malloc
//! then hands the freed top of its heap back to the kernel once it passes the trim threshold
//! (128 KiB, raised only as large blocks are freed), and serves blocks above its mmap threshold
//! straight from the kernel, so the next replay takes every page again through a page fault.
//! On the `cache_models` bench that was three quarters of a `gemini` replay (2.7 ms, of which
//! 0.7 ms was the model's own work: docs/performance.md, "The allocator keeps freed memory").

/// Keeps memory freed by one replay for the next (see the module's docs): glibc's mmap
/// threshold fixed at 32 MiB and its trim threshold at 64 MiB. Peak memory is unchanged on the
/// runs measured (`account` on 1,000 files, `workload` on 710 traces); at most 64 MiB of free
/// heap is kept beyond it. Does nothing on other allocators; call it before the work starts.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // Blocks from this size up are mapped on their own; smaller ones come from the heap.
        // 32 MiB is where glibc's adaptive threshold stops rising on 64-bit targets
        // (`DEFAULT_MMAP_THRESHOLD_MAX` in its `malloc.c`).
        const MMAP_THRESHOLD: i32 = 32 << 20;
        // Free memory at the heap's top kept for reuse before it goes back to the kernel.
        const TRIM_THRESHOLD: i32 = 64 << 20;
        // SAFETY: mallopt only changes two of malloc's tuning parameters; any value is valid.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        }
    }
}
