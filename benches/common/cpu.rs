//! This thread's CPU time, for figures that must hold on a shared, loaded machine: wall time
//! counts the time other processes hold the core, CPU time does not.

use std::time::Duration;

/// CPU time used by the calling thread so far.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux and
    // the BSDs (clock_gettime(2)).
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time of one call of `f` on this thread.
pub fn cpu_of<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let t0 = thread_cpu();
    let out = f();
    (thread_cpu() - t0, out)
}

/// The median of `xs` (sorted in place).
pub fn median(xs: &mut [Duration]) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}
