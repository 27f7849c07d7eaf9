//! The Tauri shell: hands the files it was opened with to the app already running on the same
//! library (`open_with`), else opens the library and starts its job workers (exiting with the
//! error when it cannot), removes a crashed run's virtual microphone, registers every command
//! the UI calls, and stops a live stream when the app ends.

#[cfg(test)]
mod bindings;
mod commands;
#[cfg(test)]
mod contract;
mod error;
mod open_with;
mod state;

use std::sync::Arc;
use tauri::Manager;
use timbre_core::Library;
use timbre_core::jobs::JobSystem;
use timbre_core::model_cache::ModelCache;

/// Runs the app until it exits, then stops the job system; exits with status 1 when the library
/// cannot be opened.
pub fn run() {
    let opened = open_with::paths_in(std::env::args_os().skip(1));
    let data_dir = timbre_core::library::resolve_data_dir(None).unwrap_or_else(|err| {
        eprintln!("Timbre Studio cannot find its library: {err:#}");
        std::process::exit(1);
    });
    if let Err(err) = std::fs::create_dir_all(&data_dir) {
        eprintln!("Timbre Studio cannot create {}: {err}", data_dir.display());
        std::process::exit(1);
    }
    let listener = match open_with::start(&data_dir, &opened) {
        open_with::Start::HandedOver => return,
        open_with::Start::First(listener) => listener,
    };
    let owns_socket = listener.is_some();
    let models = Arc::new(ModelCache::default());
    let jobs = open_job_system(&data_dir, &models).unwrap_or_else(|err| {
        eprintln!("Timbre Studio cannot open its library: {err:#}");
        std::process::exit(1);
    });
    // A virtual microphone a crashed run left behind; without a sound server there is none.
    std::thread::spawn(|| {
        let _ = timbre_audio::live::virtual_mic::remove_leftovers();
    });
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(state::AppState::new(jobs, models))
        .manage(open_with::OpenedFiles::new(opened))
        .setup(move |app| {
            if let Some(listener) = listener {
                open_with::serve(listener, app.handle().clone());
            }
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::library::list_voices,
            commands::library::create_voice,
            commands::library::list_takes,
            commands::library::rename_take,
            commands::library::delete_take,
            commands::library::set_take_tags,
            commands::library::set_take_voice,
            commands::library::get_take_audio,
            commands::library::import_files,
            commands::jobs::list_jobs,
            commands::jobs::list_job_events,
            commands::jobs::cancel_job,
            commands::jobs::retry_job,
            commands::jobs::resume_job,
            commands::jobs::drop_job,
            commands::jobs::get_job_report,
            commands::jobs::subscribe_notifications,
            commands::jobs::get_resource_snapshot,
            commands::jobs::get_model_cache,
            commands::jobs::free_model_cache,
            commands::devices::get_device_report,
            commands::devices::set_devices,
            commands::settings::get_settings,
            commands::settings::set_setting,
            open_with::take_opened_files,
            commands::about::get_about,
            commands::about::check_for_updates,
            commands::about::install_update,
            commands::runtime::install_cuda_runtime,
            commands::runtime::remove_cuda_runtime,
            commands::record::list_input_devices,
            commands::analyze::analyze_pitch,
            commands::live::list_live_devices,
            commands::live::start_live,
            commands::live::live_status,
            commands::live::update_live,
            commands::live::stop_live,
            commands::live::measure_live_latency,
            commands::live::get_live_defaults,
            commands::live::tune_live,
            commands::record::start_recording,
            commands::record::stop_recording,
            commands::record::cancel_recording,
            commands::models::list_models,
            commands::models::import_voice,
            commands::models::rename_model,
            commands::models::delete_model,
            commands::models::attach_model_index,
            commands::models::choose_model_embedder,
            commands::models::blend_models,
            commands::models::export_model,
            commands::assets::list_assets,
            commands::assets::download_assets,
            commands::assets::verify_assets,
            commands::assets::remove_asset,
            commands::assets::get_doctor_report,
            commands::convert::submit_conversions,
            commands::convert::get_conversion_defaults,
            commands::convert::get_parameter_ranges,
            commands::convert::list_conversions,
            commands::convert::get_conversion_audio,
            commands::convert::get_conversion_input_audio,
            commands::convert::delete_conversion,
            commands::export::get_export_name,
            commands::export::export_library_item,
            commands::export::export_library_items,
            commands::export::reveal_file,
            commands::drag_out::start_drag_out,
            commands::convert::list_effect_presets,
            commands::convert::save_effect_preset,
            commands::convert::delete_effect_preset,
            commands::compare::record_listening_test,
            commands::compare::list_listening_tests,
            commands::clean::list_enhance_presets,
            commands::clean::list_isolation_models,
            commands::clean::submit_cleaning,
            commands::clean::list_derived_takes,
            commands::library::list_derived_links,
            commands::clean::preview_cleaning,
            commands::clean::get_preview_audio,
            commands::cover::submit_covers,
            commands::cover::list_cover_stems,
            commands::datasets::list_datasets,
            commands::datasets::prepare_dataset,
            commands::train::list_trainings,
            commands::train::get_training_defaults,
            commands::train::start_training,
            commands::train::stop_training,
            commands::train::resume_training,
            commands::train::list_training_metrics,
            commands::train::list_training_previews,
            commands::train::get_training_preview_audio,
            commands::train::export_training,
            commands::train::get_judge_report,
            commands::train::get_judge_sample_audio,
        ])
        .build(tauri::generate_context!())
        .expect("error while building Timbre Studio")
        // The event loop ends the process itself: what must happen at exit happens here. A job
        // still running is not waited for (a training can take hours); the next start recovers it.
        .run(move |app, event| {
            if let tauri::RunEvent::Exit = event {
                stop_live(app);
                if owns_socket {
                    open_with::remove_socket(&data_dir);
                }
            }
        });
}

/// A live stream ends with the app: its recording saved, its virtual microphone removed.
fn stop_live(app: &tauri::AppHandle) {
    let state = app.state::<state::AppState>();
    let live = commands::live::stream(&state).take();
    if let Some(live) = live
        && let Err(err) = live.stop()
    {
        eprintln!("Timbre Studio: the live stream did not stop cleanly: {err:#}");
    }
}

fn open_job_system(
    dir: &std::path::Path,
    models: &Arc<ModelCache>,
) -> anyhow::Result<Arc<JobSystem>> {
    let library = Arc::new(Library::open(dir)?);
    let jobs = JobSystem::new(library, timbre_core::handlers::job_handlers(models))?;
    jobs.start_workers()?;
    Ok(jobs)
}
