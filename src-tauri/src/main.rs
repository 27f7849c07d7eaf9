//! The Timbre Studio executable: oneDNN's kernel cache limited while the process has one
//! thread, then the app (`timbre_studio_lib::run`).

// Keeps a console window from opening alongside the app on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // SAFETY: first thing in `main`, while the process has one thread.
    unsafe { timbre_nn::device::set_cpu_kernel_options() };
    timbre_studio_lib::run()
}
