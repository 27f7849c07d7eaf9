//! The registry of job kinds: every kind's handler, as the job system of the app, the CLI and
//! the tests runs them. The one module that knows every kind, above them all.

use std::sync::Arc;

use crate::{
    assets, clean, convert, cover, cuda_runtime, dataset, import, jobs, live, model_cache,
    torch_errors, train, updates, voice_engine, voice_import,
};

/// Every job kind this build can run, the model-loading ones sharing `models`; libtorch's
/// out-of-memory failures in any of them reach the job system typed.
pub fn job_handlers(models: &Arc<model_cache::ModelCache>) -> Vec<Arc<dyn jobs::JobHandler>> {
    let engine = voice_engine::SharedEngine::new(models.clone());
    let kinds: [Arc<dyn jobs::JobHandler>; 12] = [
        Arc::new(import::ImportHandler),
        Arc::new(convert::ConvertHandler::new(engine.clone())),
        Arc::new(clean::EnhanceHandler),
        Arc::new(clean::IsolateHandler::new(models.clone())),
        Arc::new(cover::CoverHandler::new(engine)),
        Arc::new(dataset::DatasetHandler::new(models.clone())),
        Arc::new(train::TrainHandler::new(models.clone())),
        Arc::new(assets::DownloadHandler),
        Arc::new(voice_import::VoiceImportHandler),
        Arc::new(live::tune::TuneHandler::new(models.clone())),
        Arc::new(cuda_runtime::RuntimeInstallHandler),
        Arc::new(updates::UpdateInstallHandler),
    ];
    kinds
        .into_iter()
        .map(|kind| Arc::new(torch_errors::TypedTorchErrors(kind)) as Arc<dyn jobs::JobHandler>)
        .collect()
}
