pub mod jobs;
pub mod library;
pub mod record;
