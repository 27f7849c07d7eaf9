//! The Train page's datasets: the prepared ones, and preparing one (the `dataset` job).

use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use tauri::State;
use timbre_core::dataset::{self, PrepareRequest};
use timbre_core::db::datasets::{self, Dataset};
use timbre_core::db::jobs::Job;

/// A dataset with what its last preparation fixed lifted out of its parameters.
#[derive(Serialize, ts_rs::TS)]
pub struct DatasetRow {
    #[serde(flatten)]
    dataset: Dataset,
    sample_rate: Option<u64>,
    #[ts(type = r#""v1" | "v2" | null"#)]
    version: Option<String>,
    #[ts(as = "Option<timbre_nn::pipeline::pitch::F0Method>")]
    f0_method: Option<String>,
}

impl From<Dataset> for DatasetRow {
    fn from(dataset: Dataset) -> Self {
        let text = |key: &str| dataset.params[key].as_str().map(String::from);
        DatasetRow {
            sample_rate: dataset.params["sample_rate"].as_u64(),
            version: text("version"),
            f0_method: text("f0_method"),
            dataset,
        }
    }
}

#[tauri::command]
pub fn list_datasets(state: State<'_, AppState>) -> CommandResult<Vec<DatasetRow>> {
    let rows = datasets::list(&state.library().conn())?;
    Ok(rows.into_iter().map(DatasetRow::from).collect())
}

/// Queues a `dataset` job and returns it at once.
#[tauri::command]
pub fn prepare_dataset(state: State<'_, AppState>, params: PrepareRequest) -> CommandResult<Job> {
    Ok(dataset::submit(&state.jobs, params)?)
}
