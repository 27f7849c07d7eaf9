//! The command boundary: any error crosses into the UI as `{kind, message}`.

use serde::Serialize;
use timbre_core::ErrorReport;

pub struct CommandError(anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for CommandError {
    fn from(err: E) -> Self {
        CommandError(err.into())
    }
}

impl Serialize for CommandError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ErrorReport::from_anyhow(&self.0).serialize(serializer)
    }
}

pub type CommandResult<T> = Result<T, CommandError>;
