pub mod clean;
pub mod compare;
pub mod convert;
pub mod jobs;
pub mod library;
pub mod models;
pub mod record;
