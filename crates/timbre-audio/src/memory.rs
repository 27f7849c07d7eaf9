//! The process's allocator: jemalloc, for Rust and, since its `malloc` is the executable's, for
//! libtorch's tensors and every C library too. glibc maps each block over 32 MB afresh and
//! unmaps it on free, so the kernel faults in and zeroes every large activation page by page:
//! a quarter of the synthesizer's CPU time. jemalloc here keeps freed pages for the next
//! allocation, and `release_free_memory` hands them back where a working set ends
//! (docs/PERFORMANCE.md, "The allocator").

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at the process's first allocation (`MALLOC_CONF` in the
/// environment still overrides them): freed pages stay with the allocator instead of decaying
/// back to the system on a timer, which purged them as fast as the synthesizer freed them.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[unsafe(no_mangle)]
pub static malloc_conf: Option<&u8> = Some(&b"dirty_decay_ms:-1,muzzy_decay_ms:-1\0"[0]);

/// Hands the allocator's free pages back to the system: between a long input's segments and
/// pitch pieces, whose tensors each have their own sizes, and after every job, so that what one
/// piece of work freed does not stay mapped for the rest of the process.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    purge_all_arenas();
}

/// While it lives, free pages go back to the system once unused for a while (see
/// [`decay_free_memory`]).
#[must_use = "the decay ends when the guard drops"]
pub struct DecayingFreeMemory(());

/// Makes free pages go back to the system after `decay_ms` unused, on every arena and on arenas
/// made later, until the guard drops (then they stay again, the process's setting). Training on
/// the CPU needs it: its steps' activations differ in shape from batch to batch (the sampler's
/// length buckets), and with freed pages kept the process held every size ever freed: RVC's v2
/// 40k at batch 4 grew to 11 GB in three minutes, and past the 24 GB machine's memory in six,
/// against a steady 3.5 GB with a second's decay (docs/PERFORMANCE.md, "The allocator").
pub fn decay_free_memory(decay_ms: i64) -> DecayingFreeMemory {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    set_decay_ms(decay_ms);
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = decay_ms;
    DecayingFreeMemory(())
}

impl Drop for DecayingFreeMemory {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        set_decay_ms(-1);
    }
}

/// jemalloc's dirty and muzzy decay on every arena there is and for arenas made later.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_decay_ms(decay_ms: i64) {
    let write = |name: &str, value: isize| {
        let name = std::ffi::CString::new(name).expect("no NUL in a control's name");
        let mut value = value;
        // SAFETY: these controls are `ssize_t`, read from `value`; jemalloc takes its own locks.
        unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&raw mut value).cast(),
                std::mem::size_of::<isize>(),
            )
        }
    };
    let mut arenas: u32 = 0;
    let mut len = std::mem::size_of::<u32>();
    // SAFETY: `arenas.narenas` is an `unsigned`, written into `arenas` of `len` bytes.
    let counted = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"arenas.narenas".as_ptr(),
            (&raw mut arenas).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    let value = decay_ms as isize;
    for kind in ["dirty", "muzzy"] {
        write(&format!("arenas.{kind}_decay_ms"), value);
        if counted == 0 {
            for arena in 0..arenas {
                // Arenas not made yet refuse; they take the default just set.
                write(&format!("arena.{arena}.{kind}_decay_ms"), value);
            }
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn purge_all_arenas() -> i32 {
    // `MALLCTL_ARENAS_ALL` in jemalloc's headers.
    const PURGE: &std::ffi::CStr = c"arena.4096.purge";
    // SAFETY: this control takes no value and returns none; jemalloc takes its own locks and
    // returns only pages no allocation holds.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    fn read_i64(name: &std::ffi::CStr) -> i64 {
        let mut value: isize = 0;
        let mut len = std::mem::size_of::<isize>();
        // SAFETY: these controls are `ssize_t`, written into `value` of `len` bytes.
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                (&raw mut value).cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(status, 0, "mallctl {name:?}");
        value as i64
    }

    /// The process's resident memory, from `/proc/self/statm` (in pages).
    fn resident_bytes() -> i64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: i64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        // SAFETY: sysconf only reads a constant of the system.
        pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) }
    }

    #[test]
    fn jemalloc_runs_with_our_options_and_keeps_freed_pages_until_released() {
        assert_eq!(read_i64(c"opt.dirty_decay_ms"), -1);
        assert_eq!(read_i64(c"opt.muzzy_decay_ms"), -1);
        let before = resident_bytes();
        // Far more than other tests running beside this one allocate, so their allocations
        // cannot hide the difference.
        let block = vec![1u8; 768 << 20];
        std::hint::black_box(&block);
        drop(block);
        let after_free = resident_bytes();
        assert!(
            after_free - before > 512 << 20,
            "freed pages were handed back at once: {before} → {after_free} bytes resident"
        );
        assert_eq!(purge_all_arenas(), 0);
        let after_release = resident_bytes();
        assert!(
            after_free - after_release > 512 << 20,
            "release kept the pages: {after_free} → {after_release} bytes resident"
        );

        // In the same test, not beside it: the decay is the whole process's.
        let decaying = decay_free_memory(0);
        assert_eq!(read_i64(c"arena.0.dirty_decay_ms"), 0);
        let before = resident_bytes();
        let block = vec![1u8; 768 << 20];
        std::hint::black_box(&block);
        drop(block);
        let after_free = resident_bytes();
        assert!(
            after_free - before < 256 << 20,
            "with no decay time freed pages stayed: {before} → {after_free} bytes resident"
        );
        drop(decaying);
        assert_eq!(read_i64(c"arena.0.dirty_decay_ms"), -1);
        assert_eq!(read_i64(c"arenas.muzzy_decay_ms"), -1);
    }
}
