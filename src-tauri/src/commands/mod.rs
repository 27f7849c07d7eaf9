//! The commands the UI calls, one module per page or area; each command is registered in
//! `tauri::generate_handler!` in `lib.rs`.

pub mod about;
pub mod analyze;
pub mod assets;
pub mod clean;
pub mod compare;
pub mod convert;
pub mod cover;
pub mod datasets;
pub mod devices;
pub mod drag_out;
pub mod export;
pub mod jobs;
pub mod library;
pub mod live;
pub mod models;
pub mod record;
pub mod runtime;
pub mod settings;
pub mod train;
