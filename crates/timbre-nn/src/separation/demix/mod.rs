//! Chunked overlap-add separation, as ZFTurbo/Music-Source-Separation-Training
//! `utils/model_utils.py` (`demix`, generic mode, and `_getWindowingArray`) does it: chunks of
//! `chunk_size` every `chunk_size / num_overlap` samples, each weighted by a window with linear
//! fades of `chunk_size / 10`, summed and divided by the summed windows.
//!
//! `Demixer` does it on a stream: the mix arrives in blocks of any size and the estimate leaves
//! as soon as no later chunk can reach it, so memory is a few batches of chunks whatever the
//! track's length. It performs the same operations in the same order as the whole-track
//! computation, so the result does not depend on the block size.

use anyhow::{Result, bail, ensure};
use tch::{Device, Kind, Tensor};

#[cfg(test)]
mod tests;

/// How `demix` cuts a mix into chunks (upstream `audio.chunk_size` and `inference.*`).
#[derive(Debug, Clone, Copy)]
pub struct DemixOptions {
    /// Samples per chunk, the length of one model input.
    pub chunk_size: i64,
    /// Chunks covering each sample: a chunk starts every `chunk_size / num_overlap` samples.
    pub num_overlap: i64,
    /// Most chunks passed to `separate` in one call.
    pub batch_size: i64,
}

impl DemixOptions {
    fn step(&self) -> i64 {
        self.chunk_size / self.num_overlap
    }

    fn border(&self) -> i64 {
        self.chunk_size - self.step()
    }

    /// Whether a mix of `length` samples is reflect-padded by `border` at both ends.
    fn padded(&self, length: i64) -> bool {
        length > 2 * self.border() && self.border() > 0
    }

    /// How many chunks a mix of `length` samples is cut into.
    pub fn chunk_count(&self, length: i64) -> usize {
        let total = if self.padded(length) {
            length + 2 * self.border()
        } else {
            length
        };
        (total.max(0) as usize).div_ceil(self.step() as usize)
    }
}

/// Ones, with a linear fade-in over the first `fade_size` samples and a fade-out over the last.
pub fn windowing_array(window_size: i64, fade_size: i64) -> Tensor {
    let window = Tensor::ones([window_size], (Kind::Float, Device::Cpu));
    if fade_size > 0 {
        window
            .narrow(0, window_size - fade_size, fade_size)
            .copy_(&Tensor::linspace(1.0, 0.0, fade_size, tch::kind::FLOAT_CPU));
        window.narrow(0, 0, fade_size).copy_(&Tensor::linspace(
            0.0,
            1.0,
            fade_size,
            tch::kind::FLOAT_CPU,
        ));
    }
    window
}

/// Separates a whole `mix` `[channels, samples]` into `[stems, channels, samples]` with
/// `separate`, which maps a batch `[chunks, channels, chunk_size]` to
/// `[chunks, stems, channels, ≥ chunk_size]`. `progress(done_chunks, total_chunks)` is told after
/// each batch; returning false cancels.
pub fn demix(
    mix: &Tensor,
    options: DemixOptions,
    mut separate: impl FnMut(&Tensor) -> Result<Tensor>,
    mut progress: impl FnMut(usize, usize) -> bool,
) -> Result<Tensor> {
    let size = mix.size();
    let [channels, length] = size[..] else {
        bail!("demix takes a mix as [channels, samples], got {size:?}")
    };
    let mut demixer = Demixer::new(options, channels, Some(length))?;
    let mut parts = Vec::new();
    parts.extend(demixer.push(mix, &mut separate, &mut progress)?);
    parts.extend(demixer.finish(&mut separate, &mut progress)?);
    Ok(Tensor::cat(&parts, 2))
}

/// The overlap-add of `demix` over a mix that arrives block by block (`push`, then `finish`).
/// Positions below are in the coordinates of the (possibly) reflect-padded mix.
pub struct Demixer {
    options: DemixOptions,
    channels: i64,
    window: Tensor,
    /// Chunks expected, for progress, until the real length is known.
    expected_chunks: usize,
    /// Mix samples received.
    received: i64,
    /// Decided once more than two borders have arrived, or at the end.
    padded: Option<bool>,
    /// The mix from `input_start` on (padded once `padded` is decided).
    input: Tensor,
    input_start: i64,
    /// Index of the next chunk to separate.
    next_chunk: i64,
    /// Weighted sums `[stems, channels, n]` and summed weights `[n]` from `sums_start` on.
    sums: Option<Tensor>,
    counts: Tensor,
    sums_start: i64,
    done: usize,
    /// The padded length, once the end of the mix has arrived.
    total_length: Option<i64>,
}

impl Demixer {
    /// `expected_length`: the mix's length if known, for progress only.
    pub fn new(options: DemixOptions, channels: i64, expected_length: Option<i64>) -> Result<Self> {
        let DemixOptions {
            chunk_size,
            num_overlap,
            batch_size,
        } = options;
        ensure!(
            chunk_size > 0 && num_overlap > 0 && num_overlap <= chunk_size && batch_size > 0,
            "bad demix options {options:?}"
        );
        ensure!(channels > 0, "the mix has no channels");
        Ok(Self {
            options,
            channels,
            window: windowing_array(chunk_size, chunk_size / 10),
            expected_chunks: expected_length.map_or(0, |l| options.chunk_count(l)),
            received: 0,
            padded: None,
            input: Tensor::zeros([channels, 0], (Kind::Float, Device::Cpu)),
            input_start: 0,
            next_chunk: 0,
            sums: None,
            counts: Tensor::zeros([0], (Kind::Float, Device::Cpu)),
            sums_start: 0,
            done: 0,
            total_length: None,
        })
    }

    /// Channels of the mix, as given to `new`.
    pub fn channels(&self) -> i64 {
        self.channels
    }

    /// Takes the next `block` `[channels, samples]` of the mix; returns the estimate
    /// `[stems, channels, n]` of the samples that became final, if any.
    pub fn push(
        &mut self,
        block: &Tensor,
        separate: &mut impl FnMut(&Tensor) -> Result<Tensor>,
        progress: &mut impl FnMut(usize, usize) -> bool,
    ) -> Result<Option<Tensor>> {
        ensure!(self.total_length.is_none(), "demix: push after finish");
        let size = block.size();
        ensure!(
            size.len() == 2 && size[0] == self.channels,
            "demix takes blocks of [{}, samples], got {size:?}",
            self.channels
        );
        let block = block.to_device(Device::Cpu).to_kind(Kind::Float);
        self.input = Tensor::cat(&[&self.input, &block], 1);
        self.received += size[1];
        let border = self.options.border();
        if self.padded.is_none() && border == 0 {
            self.padded = Some(false);
        } else if self.padded.is_none() && self.options.padded(self.received) {
            // Reflect the edges so the first and last samples are not only ever seen at a
            // chunk's edge.
            let head = self
                .input
                .narrow(1, 0, border + 1)
                .reflection_pad1d([border, 0]);
            self.input = Tensor::cat(&[&head.narrow(1, 0, border), &self.input], 1);
            self.padded = Some(true);
        }
        let Some(padded) = self.padded else {
            return Ok(None);
        };
        // A chunk that ends before the last sample received is neither the last one nor
        // shortened, whatever follows.
        let available = self.received + if padded { border } else { 0 };
        let (chunk_size, step) = (self.options.chunk_size, self.options.step());
        let mut out = Vec::new();
        loop {
            let last = self.next_chunk + self.options.batch_size - 1;
            if last * step + chunk_size >= available {
                break;
            }
            out.extend(self.batch(i64::MAX, separate, progress)?);
        }
        // Keep what the next chunks read and the last `border + 1` samples, which the end's
        // reflection needs.
        let keep_from = (self.next_chunk * step).min(available - border - 1);
        self.drop_input_before(keep_from);
        Ok(join(out))
    }

    /// Ends the mix: separates the rest and returns the remaining estimate.
    pub fn finish(
        &mut self,
        separate: &mut impl FnMut(&Tensor) -> Result<Tensor>,
        progress: &mut impl FnMut(usize, usize) -> bool,
    ) -> Result<Option<Tensor>> {
        ensure!(self.total_length.is_none(), "demix: finished twice");
        ensure!(self.received > 0, "the mix is empty");
        let border = self.options.border();
        let padded = *self.padded.get_or_insert(false);
        let total_length = if padded {
            let tail = self
                .input
                .narrow(1, self.input.size()[1] - border - 1, border + 1);
            let reflected = tail
                .reflection_pad1d([0, border])
                .narrow(1, border + 1, border);
            self.input = Tensor::cat(&[&self.input, &reflected], 1);
            self.received + 2 * border
        } else {
            self.received
        };
        self.total_length = Some(total_length);
        self.expected_chunks = self.options.chunk_count(self.received);
        let mut out = Vec::new();
        while self.next_chunk * self.options.step() < total_length {
            out.extend(self.batch(total_length, separate, progress)?);
        }
        if self.sums.is_none() {
            bail!("the mix gave no chunks")
        }
        out.extend(self.emit(total_length));
        Ok(join(out))
    }

    /// Separates the next batch of chunks of a mix `total_length` long (`i64::MAX`: not known
    /// yet, and this batch is not the last) and returns what became final.
    fn batch(
        &mut self,
        total_length: i64,
        separate: &mut impl FnMut(&Tensor) -> Result<Tensor>,
        progress: &mut impl FnMut(usize, usize) -> bool,
    ) -> Result<Option<Tensor>> {
        let (chunk_size, step) = (self.options.chunk_size, self.options.step());
        let starts: Vec<i64> = (self.next_chunk..self.next_chunk + self.options.batch_size)
            .map(|k| k * step)
            .take_while(|&start| start < total_length)
            .collect();
        let chunks: Vec<Tensor> = starts
            .iter()
            .map(|&start| chunk_at(&self.input, start - self.input_start, chunk_size))
            .collect();
        let separated = separate(&Tensor::stack(&chunks, 0))?
            .to_device(Device::Cpu)
            .to_kind(Kind::Float);
        let out = separated.size();
        ensure!(
            out.len() == 4
                && out[0] == chunks.len() as i64
                && out[2] == self.channels
                && out[3] >= chunk_size.min(total_length),
            "the model gave {out:?} for {} chunks of [{}, {chunk_size}]",
            chunks.len(),
            self.channels
        );
        let end = starts.iter().map(|&s| s + chunk_size.min(total_length - s));
        self.grow_sums(out[1], end.max().unwrap_or(0));
        let fade_size = chunk_size / 10;
        let window = batch_window(&self.window, fade_size, &starts, step, total_length);
        let sums = self.sums.as_ref().expect("grown above");
        for (j, &start) in starts.iter().enumerate() {
            let segment = chunk_size.min(total_length - start);
            let weights = window.narrow(0, 0, segment);
            let mut sum = sums.narrow(2, start - self.sums_start, segment);
            sum += separated.get(j as i64).narrow(-1, 0, segment) * &weights;
            let mut count = self.counts.narrow(0, start - self.sums_start, segment);
            count += weights;
        }
        self.next_chunk += starts.len() as i64;
        self.done += starts.len();
        if !progress(self.done, self.expected_chunks.max(self.done)) {
            bail!("separation cancelled");
        }
        // No later chunk reaches below the next one's start.
        Ok(self.emit((self.next_chunk * step).min(total_length)))
    }

    /// Extends the sums with zeros up to position `end`.
    fn grow_sums(&mut self, stems: i64, end: i64) {
        let have = self.sums_start + self.counts.size()[0];
        let sums = self.sums.get_or_insert_with(|| {
            Tensor::zeros([stems, self.channels, 0], (Kind::Float, Device::Cpu))
        });
        if end > have {
            let more = end - have;
            let zeros = Tensor::zeros([stems, self.channels, more], (Kind::Float, Device::Cpu));
            *sums = Tensor::cat(&[&*sums, &zeros], 2);
            self.counts = Tensor::cat(
                &[&self.counts, &Tensor::zeros([more], tch::kind::FLOAT_CPU)],
                0,
            );
        }
    }

    /// The estimate of the positions before `end` not yet returned, without the padding.
    fn emit(&mut self, end: i64) -> Option<Tensor> {
        let sums = self.sums.as_ref()?;
        let count = end - self.sums_start;
        if count <= 0 {
            return None;
        }
        // Samples no window reached (weight 0 at a fade's end) come out silent, as upstream's
        // nan_to_num makes them.
        let estimate = (sums.narrow(2, 0, count) / self.counts.narrow(0, 0, count))
            .nan_to_num(0.0, None, None);
        let border = if self.padded == Some(true) {
            self.options.border()
        } else {
            0
        };
        let (first, last) = (self.sums_start.max(border), end.min(border + self.received));
        let left = self.counts.size()[0] - count;
        self.sums = Some(sums.narrow(2, count, left));
        self.counts = self.counts.narrow(0, count, left);
        self.sums_start = end;
        (last > first).then(|| estimate.narrow(2, first - (end - count), last - first))
    }

    fn drop_input_before(&mut self, position: i64) {
        let drop = position - self.input_start;
        if drop > 0 {
            let left = self.input.size()[1] - drop;
            self.input = self.input.narrow(1, drop, left);
            self.input_start = position;
        }
    }
}

fn join(parts: Vec<Tensor>) -> Option<Tensor> {
    match parts.len() {
        0 => None,
        1 => parts.into_iter().next(),
        _ => Some(Tensor::cat(&parts, 2)),
    }
}

/// `chunk_size` samples from `start`: a short last chunk is reflect-padded when it holds more
/// than half a chunk, else zero-padded.
fn chunk_at(mix: &Tensor, start: i64, chunk_size: i64) -> Tensor {
    let available = chunk_size.min(mix.size()[1] - start);
    let part = mix.narrow(1, start, available);
    let missing = chunk_size - available;
    if missing == 0 {
        part
    } else if available > chunk_size / 2 {
        part.reflection_pad1d([0, missing])
    } else {
        part.constant_pad_nd([0, missing])
    }
}

/// Upstream picks one window per batch: without the fade-in when the batch ends with the first
/// chunk, else without the fade-out when it ends with the last one.
fn batch_window(
    window: &Tensor,
    fade_size: i64,
    batch_starts: &[i64],
    step: i64,
    total_length: i64,
) -> Tensor {
    let next_start = batch_starts.last().map_or(0, |&last| last + step);
    if fade_size == 0 {
        return window.shallow_clone();
    }
    let window = window.copy();
    if next_start - step == 0 {
        let _ = window.narrow(0, 0, fade_size).fill_(1.0);
    } else if next_start >= total_length {
        let size = window.size()[0];
        let _ = window.narrow(0, size - fade_size, fade_size).fill_(1.0);
    }
    window
}
