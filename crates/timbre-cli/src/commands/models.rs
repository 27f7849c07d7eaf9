//! `timbre models list|info|import|index|rm|blend|export|files`: voice models in the library,
//! imported from a `.pth`, a zip, a folder or a link, blended, or exported with their
//! descriptive entries edited; and the shared weight files of the models folder.

use super::open_library;
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::db::models::{self, Model};
use timbre_core::model_import;
use timbre_core::voice_import::{self, VoiceImportRequest};
use timbre_core::{assets, models_folder};
use timbre_nn::model_info::InfoEdits;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Voice models in the library.
    List,
    /// One model: its version, rate and pitch, the vocoder and the embedder it was trained
    /// with, and the entries its file carries (epoch, author, Applio's fields).
    Info { model: String },
    /// Import RVC voice models with their indexes: from a .pth, a .zip, a folder (an RVC or
    /// Applio install) or an http(s) link (Hugging Face `resolve` or `blob`, or direct).
    Import {
        /// A .pth, a .zip, a folder or a link.
        source: String,
        /// An index file to import with the voice (instead of any the source holds).
        #[arg(long)]
        index: Option<PathBuf>,
        /// When several indexes of the source fit a voice: the one to use, by its path in the
        /// source or its file name.
        #[arg(long, value_name = "PATH")]
        use_index: Option<String>,
        /// Name in the library (one voice only; default: the model's own name, else the file
        /// name).
        #[arg(long)]
        name: Option<String>,
        /// The voice it belongs to (created if new).
        #[arg(long)]
        voice: Option<String>,
    },
    /// Attach or replace the index of a model.
    Index { model: String, index: PathBuf },
    /// Choose the embedder folder of a voice trained on a custom one (Applio's `custom`): a
    /// transformers HuBERT folder with config.json.
    Embedder {
        model: String,
        #[arg(long, value_name = "DIR")]
        folder: PathBuf,
    },
    /// Remove a model from the library.
    Rm { model: String },
    /// A new model as the weighted blend of two or more compatible models (same version, sample
    /// rate and pitch guidance), as RVC's ckpt merge and Applio's voice blender make it.
    Blend {
        /// The models to blend (names or ids).
        #[arg(num_args = 2.., required = true)]
        models: Vec<String>,
        /// One weight per model, comma-separated (default: equal); they need not add up to 1.
        // A value that starts with a hyphen is a (negative) weight, refused with the reason.
        #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
        weights: Vec<f64>,
        /// The blend's name in the library.
        #[arg(long)]
        name: String,
    },
    /// Write a model's .pth to OUT with its descriptive entries edited (RVC's "modify model
    /// info"): name, author, description, info; the weights are unchanged.
    Export {
        model: String,
        out: PathBuf,
        /// The name written into the file (`model_name`).
        #[arg(long)]
        model_name: Option<String>,
        #[arg(long)]
        author: Option<String>,
        #[arg(long)]
        description: Option<String>,
        /// RVC's `info` string.
        #[arg(long)]
        info: Option<String>,
    },
    /// The shared weight files (HuBERT, RMVPE, pretrained, separation) and whether each is there.
    Files,
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    let library = open_library(data_dir)?;
    match cmd {
        Command::List => {
            let models = models::list(&library.conn())?;
            out.print(&models, || {
                models.iter().map(model_line).collect::<Vec<_>>().join("\n")
            });
        }
        Command::Info { model } => {
            let model = models::find(&library.conn(), &model)?;
            let details = ModelDetails::of(&model);
            out.print(&details, || details.describe());
        }
        Command::Import {
            source,
            index,
            use_index,
            name,
            voice,
        } => {
            let request = VoiceImportRequest {
                source,
                index,
                use_index,
                name,
                voice_id: library.resolve_voice(voice.as_deref())?,
            };
            let report = voice_import::import(&library, &request, &mut |_, message| {
                if !out.json {
                    eprint!("\r\x1b[2K{message}");
                }
                Ok(())
            })?;
            out.note("");
            for skipped in &report.skipped {
                out.note(&format!("skipped   {}: {}", skipped.file, skipped.reason));
            }
            for warning in &report.warnings {
                out.note(&format!("warning   {warning}"));
            }
            out.print(&report.models, || {
                report
                    .models
                    .iter()
                    .map(|m| format!("imported  {}", model_line(m)))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Index { model, index } => {
            let id = models::find(&library.conn(), &model)?.id;
            let model = model_import::attach_index(&library, id, &index)?;
            out.print(&model, || format!("indexed   {}", model_line(&model)));
        }
        Command::Embedder { model, folder } => {
            let id = models::find(&library.conn(), &model)?.id;
            let model = model_import::choose_custom_embedder(&library, id, &folder)?;
            out.print(&model, || {
                format!("embedder  {} from {}", model_line(&model), folder.display())
            });
        }
        Command::Rm { model } => {
            let id = models::find(&library.conn(), &model)?.id;
            let model = library.delete_model(id)?;
            out.print(&model, || format!("removed   {}", model_line(&model)));
        }
        Command::Blend {
            models: names,
            weights,
            name,
        } => {
            let ids = names
                .iter()
                .map(|m| Ok(models::find(&library.conn(), m)?.id))
                .collect::<Result<Vec<_>>>()?;
            let weights = if weights.is_empty() {
                vec![1.0; ids.len()]
            } else {
                weights
            };
            let model = model_import::blend(&library, &ids, &weights, &name)?;
            out.print(&model, || format!("blended   {}", model_line(&model)));
        }
        Command::Export {
            model,
            out: path,
            model_name,
            author,
            description,
            info,
        } => {
            let id = models::find(&library.conn(), &model)?.id;
            let edits = InfoEdits {
                model_name,
                author,
                description,
                info,
            };
            let model = model_import::export_with_info(&library, id, &edits, &path)?;
            out.print(&serde_json::json!({ "model": model, "out": path }), || {
                format!("exported  {} to {}", model_line(&model), path.display())
            });
        }
        Command::Files => {
            let dir = models_folder::of(&library)?;
            let files = assets::known_files(&dir)?;
            out.print(
                &serde_json::json!({ "models_dir": dir, "files": files }),
                || {
                    let mut lines = vec![format!("models folder: {}", dir.display())];
                    lines.extend(files.iter().map(|f| {
                        let state = if f.present { "present" } else { "missing" };
                        format!(
                            "{state:<8} {:<28} {:<26} {}",
                            f.name,
                            f.location,
                            f.needed_for.join(", ")
                        )
                    }));
                    lines.join("\n")
                },
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn model_line(m: &Model) -> String {
    let rate = m
        .sample_rate
        .map_or("?".into(), |r| format!("{}k", r / 1000));
    let pitch = if m.f0 == Some(false) {
        "no pitch"
    } else {
        "pitch"
    };
    let index = if m.index_sha256.is_some() {
        "index"
    } else {
        "no index"
    };
    format!(
        "{:>5}  {:<32} {} {:>4}  {:<8} {}",
        m.id,
        m.name,
        m.version.as_deref().unwrap_or("?"),
        rate,
        pitch,
        index
    )
}

/// `models info`: the row, and the vocoder and embedder it plays with (RVC's where the file
/// names none), and whether it is conditioned on energy.
#[derive(serde::Serialize)]
struct ModelDetails<'a> {
    #[serde(flatten)]
    model: &'a Model,
    vocoder: String,
    embedder: String,
    energy: bool,
}

impl<'a> ModelDetails<'a> {
    fn of(model: &'a Model) -> Self {
        // What import stored (what the weights are), else the file's own entry (rows stored
        // before: every one a HiFi-GAN voice, its embedder as the file names it).
        let stored = |key: &str, file_key: &str, default: &str| {
            model.metadata[key]
                .as_str()
                .or(model.metadata["file"][file_key].as_str())
                .unwrap_or(default)
                .to_owned()
        };
        ModelDetails {
            model,
            vocoder: stored("vocoder", "vocoder", "HiFi-GAN"),
            embedder: stored("embedder", "embedder_model", "contentvec"),
            // Rows stored before voices could be: none is.
            energy: model.metadata["energy"].as_bool().unwrap_or(false),
        }
    }

    fn describe(&self) -> String {
        let m = self.model;
        let number = |key: &str| m.metadata[key].as_i64().map(|n| n.to_string());
        let mut lines = vec![
            model_line(m),
            format!(
                "  {} content features, {} speaker(s), {} samples per frame",
                number("feature_dim").unwrap_or("?".into()),
                number("speakers").unwrap_or("?".into()),
                number("hop").unwrap_or("?".into())
            ),
            format!("  vocoder   {}", self.vocoder),
            format!("  embedder  {}", self.embedder),
        ];
        if self.energy {
            lines.push(
                "  energy    conditioned on the input's loudness (Vietnamese-RVC's emb_energy)"
                    .into(),
            );
        }
        if let Some(entries) = m.metadata["file"].as_object() {
            let skip = ["vocoder", "embedder_model", "other"];
            for (key, value) in entries {
                if skip.contains(&key.as_str()) || value.is_null() {
                    continue;
                }
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                lines.push(format!(
                    "  {key:<9} {}",
                    crate::output::escape_controls(&text)
                ));
            }
            if let Some(other) = entries.get("other").and_then(|o| o.as_object()) {
                for (key, value) in other {
                    // The file's own flag, when the line above already says it.
                    if key == "energy" && self.energy {
                        continue;
                    }
                    let text = value.as_str().unwrap_or_default();
                    lines.push(format!(
                        "  {key:<9} {}",
                        crate::output::escape_controls(text)
                    ));
                }
            }
        }
        lines.join("\n")
    }
}
