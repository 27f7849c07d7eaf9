// Keeps a console window from opening alongside the app on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    timbre_nn::device::limit_kernel_cache();
    timbre_studio_lib::run()
}
