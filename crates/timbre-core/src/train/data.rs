//! A prepared dataset read as RVC's training data code reads its experiment folder (rvc_next
//! 0.2.16 `engine/train/dataset.py`: `TextAudioLoaderMultiNSFsid` / `TextAudioLoader`, their
//! collates, and the bucket sampler, in `sampler`): items, batches, and each epoch's order.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};
use timbre_nn::train::batch::Batch;
use timbre_nn::train::config::TrainingConfig;
use timbre_nn::train::spectrogram::{SpectrogramConfig, Spectrograms};

use super::sampler::{self, BOUNDARIES};
use crate::dataset_layout::{MANIFEST, Manifest, ManifestPiece};

/// Spectrograms are cached here, beside the dataset's other folders.
pub const SPECS: &str = "specs";
/// `get_labels`'s cap on an item's frames (100 a second).
const MAX_PHONE_FRAMES: i64 = 900;

/// One item as `get_audio_text_pair` returns it.
pub struct Item {
    /// `[n_fft / 2 + 1, frames]` f32.
    pub spec: Tensor,
    /// `[1, samples]` f32.
    pub wave: Tensor,
    /// `[frames, feature_dim]` f32.
    pub phone: Tensor,
    /// `[frames]` i64 and f32, for datasets with pitch.
    pub pitch: Option<Tensor>,
    /// `[frames]` f32: the pitch in Hz (`f0nsf`) for the vocoder's source; None without pitch.
    pub pitchf: Option<Tensor>,
}

/// A prepared dataset opened for training: its manifest, each piece's estimated length, and the
/// spectrogram settings, with spectrograms cached under `specs/`.
pub struct TrainingData {
    root: PathBuf,
    manifest: Manifest,
    speaker_id: i64,
    spectrogram: SpectrogramConfig,
    /// The pieces in the order `filelist.py` lists them before shuffling (sorted by name).
    file_list: Vec<usize>,
    /// Per piece, the sampler's estimate of its length.
    lengths: Vec<u64>,
    specs_computed: AtomicUsize,
    /// Where spectrograms not yet cached are computed (the extraction device).
    spectrogram_device: Device,
}

impl TrainingData {
    /// The dataset in `dataset_dir` with the spectrograms RVC trains its version and rate with.
    pub fn open(dataset_dir: &Path, speaker_id: i64) -> Result<Self> {
        let manifest = read_manifest(dataset_dir)?;
        let config = TrainingConfig::rvc(&manifest.version, manifest.sample_rate)
            .with_context(|| format!("{}", dataset_dir.join(MANIFEST).display()))?;
        Self::with_manifest(dataset_dir, manifest, speaker_id, config.data)
    }

    /// The dataset with other spectrogram settings (a configuration with overrides).
    pub fn open_with(
        dataset_dir: &Path,
        speaker_id: i64,
        spectrogram: SpectrogramConfig,
    ) -> Result<Self> {
        let manifest = read_manifest(dataset_dir)?;
        Self::with_manifest(dataset_dir, manifest, speaker_id, spectrogram)
    }

    fn with_manifest(
        root: &Path,
        manifest: Manifest,
        speaker_id: i64,
        spectrogram: SpectrogramConfig,
    ) -> Result<Self> {
        let manifest_path = root.join(MANIFEST);
        ensure!(
            !manifest.pieces.is_empty(),
            "{}: the dataset has no pieces",
            manifest_path.display()
        );
        ensure!(
            spectrogram.sampling_rate == manifest.sample_rate,
            "{}: the dataset is at {} Hz, the training configuration at {} Hz",
            manifest_path.display(),
            manifest.sample_rate,
            spectrogram.sampling_rate
        );
        // The reference's `_filter` also keeps only the lines whose feature path is 1 to 5000
        // characters long (VITS's text filter, applied to a path), which every path passes: the
        // filter that acts is the sampler's boundaries on these lengths.
        let mut lengths = Vec::with_capacity(manifest.pieces.len());
        for piece in &manifest.pieces {
            let wav = root.join(&piece.gt_wav);
            let size = std::fs::metadata(&wav)
                .with_context(|| format!("{}: cannot read the piece", wav.display()))?
                .len();
            lengths.push(sampler::estimated_length(size, spectrogram.hop_length));
            let features = root.join(&piece.features);
            ensure!(
                features.is_file(),
                "{}: the piece's features are missing",
                features.display()
            );
        }
        if lengths.iter().all(|&l| sampler::bucket_of(l).is_none()) {
            // The estimate is 4/3 of the frames of a float WAV: 4 bytes a sample.
            let seconds = |length: u64| {
                (length * 3 * spectrogram.hop_length as u64) as f64
                    / (4.0 * f64::from(manifest.sample_rate))
            };
            bail!(
                "{}: no piece has a length RVC trains on (about {:.2} to {:.2} s)",
                root.display(),
                seconds(BOUNDARIES[0]),
                seconds(BOUNDARIES[BOUNDARIES.len() - 1])
            );
        }
        let mut file_list: Vec<usize> = (0..manifest.pieces.len()).collect();
        file_list.sort_by_key(|&i| piece_name(&manifest.pieces[i].gt_wav));
        let data = Self {
            root: root.to_path_buf(),
            manifest,
            speaker_id,
            spectrogram,
            file_list,
            lengths,
            specs_computed: AtomicUsize::new(0),
            spectrogram_device: Device::Cpu,
        };
        data.remove_stale_specs();
        Ok(data)
    }

    /// The dataset's manifest: version, sample rate, pitch method and pieces.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The spectrogram settings items are computed and cached with.
    pub fn spectrogram_config(&self) -> &SpectrogramConfig {
        &self.spectrogram
    }

    /// Whether the dataset was prepared with a pitch method, so its items carry `pitch` and
    /// `pitchf`.
    pub fn has_pitch(&self) -> bool {
        self.manifest.f0_method.is_some()
    }

    /// The speaker id every batch carries.
    pub fn speaker_id(&self) -> i64 {
        self.speaker_id
    }

    /// Spectrograms computed (not read from the cache) since the dataset was opened.
    pub fn specs_computed(&self) -> usize {
        self.specs_computed.load(Ordering::Relaxed)
    }

    /// The pieces the sampler leaves out, too short or too long for its buckets.
    pub fn left_out(&self) -> Vec<usize> {
        (0..self.lengths.len())
            .filter(|&i| sampler::bucket_of(self.lengths[i]).is_none())
            .collect()
    }

    /// This shard's batches of epoch `epoch` (1 for the first, as RVC counts), as piece
    /// indices: the file list shuffled with `seed`, then bucketed and shuffled by the sampler.
    pub fn epoch_batches(
        &self,
        epoch: u64,
        batch_size: usize,
        seed: u64,
        shard: sampler::Shard,
    ) -> Vec<Vec<usize>> {
        let mut order = self.file_list.clone();
        sampler::shuffle_file_list(&mut order, seed);
        let lengths: Vec<u64> = order.iter().map(|&i| self.lengths[i]).collect();
        sampler::bucket_batches(&lengths, batch_size, epoch, shard)
            .into_iter()
            .map(|batch| batch.into_iter().map(|i| order[i]).collect())
            .collect()
    }

    /// Computes the spectrograms not yet cached on `device` (the CPU by default).
    pub fn compute_spectrograms_on(mut self, device: Device) -> Self {
        self.spectrogram_device = device;
        self
    }

    /// A loader for one thread (spectrogram tensors cannot be shared between threads).
    pub fn loader(&self) -> ItemLoader<'_> {
        ItemLoader {
            data: self,
            spectrograms: Spectrograms::new(self.spectrogram, self.spectrogram_device),
        }
    }

    fn spec_path(&self, piece: usize) -> PathBuf {
        let c = &self.spectrogram;
        let name = piece_name(&self.manifest.pieces[piece].gt_wav);
        self.root.join(SPECS).join(format!(
            "{name}.{}-{}-{}.safetensors",
            c.n_fft, c.hop_length, c.win_length
        ))
    }

    /// Removes cached spectrograms of pieces no longer listed or of other settings: each is
    /// as large as its audio several times over.
    fn remove_stale_specs(&self) {
        let Ok(entries) = std::fs::read_dir(self.root.join(SPECS)) else {
            return;
        };
        let current: std::collections::HashSet<PathBuf> = (0..self.manifest.pieces.len())
            .map(|i| self.spec_path(i))
            .collect();
        for entry in entries.flatten() {
            // Dot files are other writers' files in flight.
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !hidden && !current.contains(&entry.path()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Loads items on one thread, computing the spectrograms not yet cached ([`TrainingData::loader`]).
pub struct ItemLoader<'a> {
    data: &'a TrainingData,
    spectrograms: Spectrograms,
}

impl ItemLoader<'_> {
    /// Piece `piece` as `get_audio_text_pair` gives it.
    pub fn item(&self, piece: usize) -> Result<Item> {
        let hop = self.data.spectrogram.hop_length;
        let (phone, pitch, pitchf) = self.labels(piece)?;
        let wave = self.wave(piece)?;
        let spec = self.spec(piece, &wave)?;
        let item = Item {
            spec,
            wave,
            phone,
            pitch,
            pitchf,
        };
        let phone_frames = item.phone.size()[0];
        let spec_frames = item.spec.size()[1];
        // As the reference: only when the lengths differ is anything cut, the wave included.
        if phone_frames == spec_frames {
            return Ok(item);
        }
        let frames = phone_frames.min(spec_frames);
        Ok(Item {
            spec: item.spec.narrow(1, 0, frames),
            wave: truncate(&item.wave, 1, frames * hop),
            phone: item.phone.narrow(0, 0, frames),
            pitch: item.pitch.map(|p| truncate(&p, 0, frames)),
            pitchf: item.pitchf.map(|p| truncate(&p, 0, frames)),
        })
    }

    /// The target audio `[1, samples]`. RVC's gt wavs are float WAVs, as ours, and its loader
    /// takes the samples as they are (its division by `max_wav_value` is commented out).
    fn wave(&self, piece: usize) -> Result<Tensor> {
        let data = self.data;
        let piece = &data.manifest.pieces[piece];
        let samples = piece_audio(&data.root, &data.manifest, piece)?;
        ensure!(
            samples.len() as i64 >= data.spectrogram.n_fft,
            "{}: {} samples, too short for a spectrogram",
            data.root.join(&piece.gt_wav).display(),
            samples.len()
        );
        Ok(Tensor::from_slice(&samples).unsqueeze(0))
    }

    /// The linear spectrogram of `wave`, from the cache when it holds it, else computed and
    /// cached (the reference's `.spec.pt`).
    fn spec(&self, piece: usize, wave: &Tensor) -> Result<Tensor> {
        let path = self.data.spec_path(piece);
        let c = &self.data.spectrogram;
        // `linear`'s frames: the wave reflect-padded by (n_fft - hop) / 2 a side, no centring.
        let padded = wave.size()[1] + 2 * ((c.n_fft - c.hop_length) / 2);
        let shape = [c.n_fft / 2 + 1, (padded - c.n_fft) / c.hop_length + 1];
        let cached = Tensor::read_safetensors(&path).ok().and_then(|tensors| {
            tensors
                .into_iter()
                .find(|(name, t)| name == "spec" && t.size() == shape && t.kind() == Kind::Float)
                .map(|(_, t)| t)
        });
        if let Some(spec) = cached {
            return Ok(spec);
        }
        let spec = self
            .spectrograms
            .linear(&wave.to_device(self.data.spectrogram_device))
            .squeeze_dim(0)
            .to_device(Device::Cpu)
            .contiguous();
        let cannot_write = || format!("{}: cannot write", path.display());
        let dir = path.parent().context("a spectrogram has no folder")?;
        std::fs::create_dir_all(dir).with_context(cannot_write)?;
        let temp = tempfile::Builder::new()
            .prefix(".spec")
            .tempfile_in(dir)
            .with_context(cannot_write)?;
        Tensor::write_safetensors(&[("spec", &spec)], temp.path()).with_context(cannot_write)?;
        temp.persist(&path).with_context(cannot_write)?;
        self.data.specs_computed.fetch_add(1, Ordering::Relaxed);
        Ok(spec)
    }

    /// `get_labels` of one piece ([`labels`]).
    fn labels(&self, piece: usize) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
        let data = self.data;
        labels(&data.root, &data.manifest, &data.manifest.pieces[piece])
    }
}

/// The samples of `piece` (of the dataset in `root`) at the model rate, from its `gt_wav`.
pub fn piece_audio(root: &Path, manifest: &Manifest, piece: &ManifestPiece) -> Result<Vec<f32>> {
    let path = root.join(&piece.gt_wav);
    let audio = timbre_audio::decode_file(&path, &Default::default())
        .with_context(|| format!("{}: cannot read the piece", path.display()))?;
    let rate = manifest.sample_rate;
    ensure!(
        audio.sample_rate == rate && audio.channels.len() == 1,
        "{}: {} Hz with {} channels, the dataset's pieces are mono at {rate} Hz",
        path.display(),
        audio.sample_rate,
        audio.channels.len()
    );
    Ok(audio.channels.into_iter().next().unwrap_or_default())
}

/// `get_labels`: the features of `piece` (of the dataset in `root`) repeated to 100 frames a
/// second, capped, and the pitch cut alike: the phone features, and the coarse and fine pitch
/// for a dataset with pitch.
pub fn labels(
    root: &Path,
    manifest: &Manifest,
    piece: &ManifestPiece,
) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
    let path = root.join(&piece.features);
    let tensors = Tensor::read_safetensors(&path)
        .with_context(|| format!("{}: cannot read the features", path.display()))?;
    let take = |name: &str, kind: Kind| {
        let tensor = tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.shallow_clone())
            .with_context(|| format!("{}: has no {name}", path.display()))?;
        ensure!(
            tensor.kind() == kind,
            "{}: {name} is {:?}, expected {kind:?}",
            path.display(),
            tensor.kind()
        );
        Ok(tensor)
    };
    let features = take("features", Kind::Float)?;
    let dim = manifest.feature_dim;
    ensure!(
        features.dim() == 2 && features.size()[1] == dim,
        "{}: features of shape {:?}, expected [frames, {dim}]",
        path.display(),
        features.size()
    );
    let phone = features.repeat_interleave_self_int(2, 0, None::<i64>);
    let frames = phone.size()[0].min(MAX_PHONE_FRAMES);
    let phone = phone.narrow(0, 0, frames);
    if manifest.f0_method.is_none() {
        return Ok((phone, None, None));
    }
    let pitch = truncate(&take("f0", Kind::Int64)?, 0, frames);
    let pitchf = truncate(&take("f0nsf", Kind::Float)?, 0, frames);
    Ok((phone, Some(pitch), Some(pitchf)))
}

/// `TextAudioCollateMultiNSFsid` (`TextAudioCollate` without pitch): the items sorted by
/// spectrogram length, longest first (a stable sort, as torch's is on the CPU), each padded
/// with zeros to the longest.
pub fn collate<'a>(items: impl IntoIterator<Item = &'a Item>, speaker_id: i64) -> Batch {
    let mut order: Vec<&Item> = items.into_iter().collect();
    order.sort_by_key(|item| std::cmp::Reverse(item.spec.size()[1]));
    let n = order.len() as i64;
    let longest = |length: fn(&Item) -> i64| order.iter().map(|item| length(item)).max();
    let spec_frames = longest(|item| item.spec.size()[1]).unwrap_or(0);
    let wave_samples = longest(|item| item.wave.size()[1]).unwrap_or(0);
    let phone_frames = longest(|item| item.phone.size()[0]).unwrap_or(0);
    let bins = order.first().map_or(0, |item| item.spec.size()[0]);
    let dim = order.first().map_or(0, |item| item.phone.size()[1]);
    let zeros = |shape: &[i64], kind: Kind| Tensor::zeros(shape, (kind, Device::Cpu));

    let spec = zeros(&[n, bins, spec_frames], Kind::Float);
    let wave = zeros(&[n, 1, wave_samples], Kind::Float);
    let phone = zeros(&[n, phone_frames, dim], Kind::Float);
    let with_pitch = order.first().is_some_and(|item| item.pitch.is_some());
    let pitch = with_pitch.then(|| zeros(&[n, phone_frames], Kind::Int64));
    let pitchf = with_pitch.then(|| zeros(&[n, phone_frames], Kind::Float));
    let mut lengths = [Vec::new(), Vec::new(), Vec::new()];
    for (row, item) in order.iter().enumerate() {
        let row = row as i64;
        for (padded, value, axis) in [
            (&spec, &item.spec, 1),
            (&wave, &item.wave, 1),
            (&phone, &item.phone, 0),
        ] {
            let mut slot = padded.get(row).narrow(axis, 0, value.size()[axis as usize]);
            slot.copy_(value);
        }
        for (padded, value) in [(&pitch, &item.pitch), (&pitchf, &item.pitchf)] {
            if let (Some(padded), Some(value)) = (padded, value) {
                let mut slot = padded.get(row).narrow(0, 0, value.size()[0]);
                slot.copy_(value);
            }
        }
        lengths[0].push(item.phone.size()[0]);
        lengths[1].push(item.spec.size()[1]);
        lengths[2].push(item.wave.size()[1]);
    }
    let [phone_lengths, spec_lengths, wave_lengths] = lengths.map(|l| Tensor::from_slice(&l));
    Batch {
        phone,
        phone_lengths,
        pitch,
        pitchf,
        spec,
        spec_lengths,
        wave,
        wave_lengths,
        sid: Tensor::full([n], speaker_id, (Kind::Int64, Device::Cpu)),
    }
}

fn read_manifest(dataset_dir: &Path) -> Result<Manifest> {
    ensure!(
        dataset_dir.is_dir(),
        "{}: no such dataset folder",
        dataset_dir.display()
    );
    let path = dataset_dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("{}: cannot read the dataset's manifest", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a dataset manifest", path.display()))
}

/// The file name without its extension: pieces are named by their content.
fn piece_name(gt_wav: &str) -> String {
    let path = Path::new(gt_wav);
    path.file_stem()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// `tensor[..length]` along `axis`, as Python slices: shorter tensors stay whole.
fn truncate(tensor: &Tensor, axis: i64, length: i64) -> Tensor {
    tensor.narrow(axis, 0, length.min(tensor.size()[axis as usize]))
}
