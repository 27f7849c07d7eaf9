//! The `timbre` CLI against real files, a real library and real downloads, one module per area.

mod assets;
mod bad_audio;
mod bad_input;
mod clean;
mod cli;
mod concurrent_writers;
mod convert;
mod cover;
mod crash_recovery;
mod dataset;
mod doctor;
mod effects_formats;
mod interrupted_jobs;
mod isolate_memory;
mod judge;
mod library_backups;
mod library_export;
mod library_full_disk;
mod model_import;
mod options;
mod pitch;
mod shared_files;
mod temp_files;
mod train;
mod train_full_disk;
mod voice_import;
