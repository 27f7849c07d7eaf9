//! Close to Praat's "To Pitch (ac)" (Boersma 1993; praat `fon/Sound_to_Pitch.cpp` and
//! `Pitch_pathFinder` in `fon/Pitch.cpp`), run as RVC's `pm` method runs it through parselmouth
//! (`infer/modules/vc/pipeline.py`: `to_pitch_ac(time_step=0.01, voicing_threshold=0.6,
//! pitch_floor=f0_min, pitch_ceiling=f0_max)`, other settings Praat's defaults), including RVC's
//! padding of the centred Praat frames onto its grid.

use timbre_fft::num_complex::Complex64;

use super::{HOP, SAMPLE_RATE, finite_samples, frame_count, search_range};

const TIME_STEP: f64 = 0.01;
const PERIODS_PER_WINDOW: f64 = 3.0;
const MIN_CANDIDATES: usize = 15;
const SILENCE_THRESHOLD: f64 = 0.03;
const VOICING_THRESHOLD: f64 = 0.6;
const OCTAVE_COST: f64 = 0.01;
const OCTAVE_JUMP_COST: f64 = 0.35;
const VOICED_UNVOICED_COST: f64 = 0.14;
/// Lag range (as a fraction of the window) kept for interpolating the autocorrelation; with the
/// FFT padded to 1.5 windows it stays free of circular wrap-around.
const INTERPOLATION_SPAN: f64 = 0.5;
/// Sinc depths: the first strength estimate, then the peak search (deeper for lags of a few samples).
const FIRST_ESTIMATE_DEPTH: usize = 30;
const PEAK_DEPTH: usize = 70;
const SHORT_LAG_PEAK_DEPTH: usize = 700;
const PEAK_TOLERANCE: f64 = 1e-10;

/// f0 in Hz per 10 ms frame (0 = unvoiced), `frame_count(audio_16k.len())` values.
pub fn track(audio_16k: &[f32], f0_min: f32, f0_max: f32) -> Vec<f32> {
    let mut grid = vec![0.0; frame_count(audio_16k.len())];
    let Some((floor, ceiling)) = search_range(f0_min, f0_max) else {
        return grid;
    };
    let contour = praat_pitch(&finite_samples(audio_16k), floor, ceiling);
    // RVC pads Praat's centred frames with (p_len − n + 1) // 2 zeros in front, p_len = len / HOP.
    let front = (audio_16k.len() as i64 / HOP as i64 - contour.len() as i64 + 1).div_euclid(2);
    for (k, f0) in contour.into_iter().enumerate() {
        if let Some(slot) = usize::try_from(front + k as i64)
            .ok()
            .and_then(|i| grid.get_mut(i))
        {
            *slot = f0 as f32;
        }
    }
    grid
}

/// Praat's own contour (Hz, 0 = unvoiced) on its centred 10 ms frames, without RVC's placement
/// on the grid: what parselmouth's `selected_array["frequency"]` gives. Empty when the audio is
/// shorter than one analysis window or the range is invalid.
pub fn praat_contour(audio_16k: &[f32], f0_min: f32, f0_max: f32) -> Vec<f32> {
    let Some((floor, ceiling)) = search_range(f0_min, f0_max) else {
        return Vec::new();
    };
    praat_pitch(&finite_samples(audio_16k), floor, ceiling)
        .into_iter()
        .map(|f0| f0 as f32)
        .collect()
}

#[derive(Clone, Copy)]
struct Candidate {
    frequency: f64,
    strength: f64,
}

/// One analysis frame: its loudness relative to the whole sound and its pitch candidates,
/// the first of which is always "unvoiced" (frequency 0).
struct Frame {
    intensity: f64,
    candidates: Vec<Candidate>,
}

const UNVOICED: Candidate = Candidate {
    frequency: 0.0,
    strength: 0.0,
};

/// Praat's frame layout and per-frame analysis state for one sound.
struct Analyzer {
    fs: f64,
    floor: f64,
    max_candidates: usize,
    window: Vec<f64>,
    /// Autocorrelation of the window, normalized to 1 at lag 0.
    window_autocorrelation: Vec<f64>,
    half_window: usize,
    period: usize,
    half_period: usize,
    max_lag: usize,
    span: usize,
    global_peak: f64,
    fft: std::sync::Arc<dyn timbre_fft::RealToComplex<f64>>,
    ifft: std::sync::Arc<dyn timbre_fft::ComplexToReal<f64>>,
}

/// Praat's pitch contour (Hz, 0 = unvoiced) on its own frames: as many 10 ms frames as fit
/// whole windows, centred in the sound. Empty where Praat refuses (sound shorter than a window).
fn praat_pitch(x: &[f64], floor: f64, ceiling: f64) -> Vec<f64> {
    let fs = f64::from(SAMPLE_RATE);
    let dx = 1.0 / fs;
    let duration = dx * x.len() as f64;
    if floor < PERIODS_PER_WINDOW / duration {
        return Vec::new();
    }
    let max_candidates = MIN_CANDIDATES.max((ceiling / floor).floor() as usize);
    let ceiling = ceiling.min(0.5 / dx);
    let period = (1.0 / dx / floor).floor() as usize;
    let window_duration = PERIODS_PER_WINDOW / floor;
    let half_window = match ((window_duration / dx).floor() as usize / 2).checked_sub(1) {
        Some(half) if half >= 2 => half,
        _ => return Vec::new(),
    };
    let window_len = 2 * half_window;
    let frames = ((duration - window_duration) / TIME_STEP).floor() as usize + 1;
    // Sample i sits at time (i + 0.5)·dx; frames are centred in [0, duration].
    let first_time = 0.5 * duration - 0.5 * frames as f64 * TIME_STEP + 0.5 * TIME_STEP;

    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let global_peak = x.iter().fold(0.0f64, |m, v| m.max((v - mean).abs()));
    if global_peak == 0.0 {
        return vec![0.0; frames];
    }

    let mut fft_len = 1;
    while (fft_len as f64) < window_len as f64 * (1.0 + INTERPOLATION_SPAN) {
        fft_len *= 2;
    }
    let fft = timbre_fft::real_fft_f64(fft_len);
    let window: Vec<f64> = (1..=window_len)
        .map(|i| 0.5 - 0.5 * (i as f64 * std::f64::consts::TAU / (window_len + 1) as f64).cos())
        .collect();
    let mut analyzer = Analyzer {
        fs,
        floor,
        max_candidates,
        window_autocorrelation: Vec::new(),
        window,
        half_window,
        period,
        half_period: period / 2 + 1,
        max_lag: ((window_len as f64 / PERIODS_PER_WINDOW).floor() as usize + 2).min(window_len),
        span: (window_len as f64 * INTERPOLATION_SPAN).floor() as usize,
        global_peak,
        fft: fft.forward,
        ifft: fft.inverse,
    };
    let mut scratch = Scratch::new(&analyzer);
    scratch.frame[..window_len].copy_from_slice(&analyzer.window);
    let window_ac = analyzer.autocorrelation(&mut scratch);
    analyzer.window_autocorrelation = window_ac.iter().map(|v| v / window_ac[0]).collect();

    let analysed: Vec<Frame> = (0..frames)
        .map(|k| {
            let time = first_time + k as f64 * TIME_STEP;
            // Praat's "low index" of the frame centre, 0-based: floor((t − x1) / dx).
            let left = ((time - 0.5 * dx) / dx).floor() as usize;
            analyzer.analyse_frame(x, left, &mut scratch)
        })
        .collect();
    best_path(&analysed, ceiling)
}

struct Scratch {
    frame: Vec<f64>,
    spectrum: Vec<Complex64>,
    fft_scratch: Vec<Complex64>,
}

impl Scratch {
    fn new(analyzer: &Analyzer) -> Self {
        let scratch_len = analyzer
            .fft
            .get_scratch_len()
            .max(analyzer.ifft.get_scratch_len());
        Scratch {
            frame: analyzer.fft.make_input_vec(),
            spectrum: analyzer.fft.make_output_vec(),
            fft_scratch: vec![Complex64::new(0.0, 0.0); scratch_len],
        }
    }
}

impl Analyzer {
    /// Autocorrelation of `scratch.frame` (zero-padded) through its power spectrum; leaves
    /// `scratch.frame` holding it, unnormalized.
    fn autocorrelation<'a>(&self, scratch: &'a mut Scratch) -> &'a [f64] {
        // Both transforms only fail on buffer-length mismatches, which Scratch rules out.
        let _ = self.fft.process_with_scratch(
            &mut scratch.frame,
            &mut scratch.spectrum,
            &mut scratch.fft_scratch,
        );
        for bin in scratch.spectrum.iter_mut() {
            *bin = Complex64::new(bin.norm_sqr(), 0.0);
        }
        let _ = self.ifft.process_with_scratch(
            &mut scratch.spectrum,
            &mut scratch.frame,
            &mut scratch.fft_scratch,
        );
        &scratch.frame
    }

    fn analyse_frame(&self, x: &[f64], left: usize, scratch: &mut Scratch) -> Frame {
        let right = left + 1;
        let sample = |i: usize| x.get(i).copied().unwrap_or(0.0);
        let local_mean = (right.saturating_sub(self.period)..=left + self.period)
            .map(sample)
            .sum::<f64>()
            / (2 * self.period) as f64;

        let start = right.saturating_sub(self.half_window);
        let window_len = self.window.len();
        for (j, slot) in scratch.frame.iter_mut().enumerate() {
            *slot = match self.window.get(j) {
                Some(w) => (sample(start + j) - local_mean) * w,
                None => 0.0,
            };
        }
        let peak_start = self.half_window.saturating_sub(self.half_period);
        let peak_end = (self.half_window + self.half_period).min(window_len);
        let local_peak = scratch.frame[peak_start..peak_end]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let intensity = (local_peak / self.global_peak).min(1.0);
        let mut frame = Frame {
            intensity,
            candidates: vec![UNVOICED],
        };
        if local_peak == 0.0 {
            return frame;
        }

        // Normalized by lag 0 and by the window's own autocorrelation (Boersma's correction).
        let ac = self.autocorrelation(scratch);
        let r: Vec<f64> = std::iter::once(1.0)
            .chain((1..=self.span).map(|i| ac[i] / (ac[0] * self.window_autocorrelation[i])))
            .collect();

        let mut peak_lags = vec![0usize];
        for i in 2..self.max_lag.min(self.span) {
            if !(r[i] > 0.5 * VOICING_THRESHOLD && r[i] > r[i - 1] && r[i] >= r[i + 1]) {
                continue;
            }
            let dr = 0.5 * (r[i + 1] - r[i - 1]);
            let d2r = 2.0 * r[i] - r[i - 1] - r[i + 1];
            let frequency = self.fs / (i as f64 + dr / d2r);
            let strength =
                reflect_above_one(interpolate(&r, self.fs / frequency, FIRST_ESTIMATE_DEPTH));
            let place = if frame.candidates.len() < self.max_candidates {
                frame.candidates.push(UNVOICED);
                peak_lags.push(0);
                Some(frame.candidates.len() - 1)
            } else {
                // Replace the weakest, where weaker means lower strength after favouring high
                // frequencies (so a perfectly periodic signal keeps its true period).
                let favoured =
                    |c: &Candidate| c.strength - OCTAVE_COST * (self.floor / c.frequency).log2();
                let (weakest, weakest_value) = frame.candidates[1..]
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (k + 1, favoured(c)))
                    .fold(
                        (0, 2.0),
                        |best, next| if next.1 < best.1 { next } else { best },
                    );
                let value = favoured(&Candidate {
                    frequency,
                    strength,
                });
                (weakest > 0 && value > weakest_value).then_some(weakest)
            };
            if let Some(place) = place {
                frame.candidates[place] = Candidate {
                    frequency,
                    strength,
                };
                peak_lags[place] = i;
            }
        }

        for (candidate, &lag) in frame.candidates.iter_mut().zip(&peak_lags).skip(1) {
            let depth = if candidate.frequency > 0.3 * self.fs {
                SHORT_LAG_PEAK_DEPTH
            } else {
                PEAK_DEPTH
            };
            let (best_lag, best_value) = maximize(
                |lag| interpolate(&r, lag, depth),
                lag as f64 - 1.0,
                lag as f64 + 1.0,
            );
            candidate.frequency = self.fs / best_lag;
            candidate.strength = reflect_above_one(best_value);
        }
        frame
    }
}

/// Correlations above 1 come from short windows and are reflected around 1.
fn reflect_above_one(strength: f64) -> f64 {
    if strength > 1.0 {
        1.0 / strength
    } else {
        strength
    }
}

/// Praat's windowed-sinc interpolation (raised-cosine window of `depth + 0.5` samples) of the
/// autocorrelation `r` (lags 0..=span, mirrored to negative lags) at a fractional lag; within a
/// few samples of the end of `r` the depth shrinks, down to cubic and linear interpolation.
fn interpolate(r: &[f64], lag: f64, max_depth: usize) -> f64 {
    let span = r.len() as i64 - 1;
    let at = |i: i64| r[i.unsigned_abs() as usize];
    if lag.is_nan() || lag.abs() > span as f64 {
        return r[span as usize];
    }
    let mid_left = lag.floor() as i64;
    if lag == mid_left as f64 {
        return at(mid_left);
    }
    let mid_right = mid_left + 1;
    let depth = (max_depth as i64)
        .min(mid_left + span + 1)
        .min(span - mid_left);
    let (y_left, y_right) = (at(mid_left), at(mid_right));
    match depth {
        ..=1 => y_left + (lag - mid_left as f64) * (y_right - y_left),
        2 => {
            let slope_left = 0.5 * (y_right - at(mid_left - 1));
            let slope_right = 0.5 * (at(mid_right + 1) - y_left);
            let (f_left, f_right) = (lag - mid_left as f64, mid_right as f64 - lag);
            y_left * f_right + y_right * f_left
                - f_left
                    * f_right
                    * (0.5 * (slope_right - slope_left)
                        + (f_left - 0.5) * (slope_left + slope_right - 2.0 * (y_right - y_left)))
        }
        _ => {
            let window_depth = depth as f64 + 0.5;
            let left = sinc_half(lag - mid_left as f64, window_depth, depth, |n| {
                at(mid_left - n)
            });
            let right = sinc_half(mid_right as f64 - lag, window_depth, depth, |n| {
                at(mid_right + n)
            });
            left + right
        }
    }
}

/// Σₙ y(n)·sinc(π(offset + n))·½(1 + cos(π(offset + n)/window_depth)) for n in 0..depth, the sine
/// alternating in sign and the window cosine advanced by rotation rather than recomputed.
fn sinc_half(offset: f64, window_depth: f64, depth: i64, y: impl Fn(i64) -> f64) -> f64 {
    let step = std::f64::consts::PI / window_depth;
    let (sin_step, cos_step) = step.sin_cos();
    let mut phase = std::f64::consts::PI * offset;
    let mut half_sin_phase = 0.5 * phase.sin();
    let (mut sin_window, mut cos_window) = (phase / window_depth).sin_cos();
    let mut sum = 0.0;
    for n in 0..depth {
        sum += y(n) * half_sin_phase / phase * (1.0 + cos_window);
        phase += std::f64::consts::PI;
        half_sin_phase = -half_sin_phase;
        (sin_window, cos_window) = (
            cos_window * sin_step + sin_window * cos_step,
            cos_window * cos_step - sin_window * sin_step,
        );
    }
    sum
}

/// Brent's method (golden section with parabolic steps) for the maximum of `f` on `[a, b]`:
/// the location and the value there.
fn maximize(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64) -> (f64, f64) {
    const GOLDEN: f64 = 0.381_966_011_250_105_1;
    let cost = |x: f64| -f(x);
    let mut x = a + GOLDEN * (b - a);
    let (mut w, mut v) = (x, x);
    let mut fx = cost(x);
    let (mut fw, mut fv) = (fx, fx);
    let (mut step, mut previous_step) = (0.0f64, 0.0f64);
    for _ in 0..100 {
        let middle = 0.5 * (a + b);
        let tol = PEAK_TOLERANCE * x.abs() + 1e-12;
        if (x - middle).abs() <= 2.0 * tol - 0.5 * (b - a) {
            break;
        }
        let mut parabolic = false;
        if previous_step.abs() > tol {
            let r = (x - w) * (fx - fv);
            let mut q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            } else {
                q = -q;
            }
            let older_step = previous_step;
            previous_step = step;
            if p.abs() < (0.5 * q * older_step).abs() && p > q * (a - x) && p < q * (b - x) {
                step = p / q;
                let u = x + step;
                if u - a < 2.0 * tol || b - u < 2.0 * tol {
                    step = tol.copysign(middle - x);
                }
                parabolic = true;
            }
        }
        if !parabolic {
            previous_step = if x >= middle { a - x } else { b - x };
            step = GOLDEN * previous_step;
        }
        let u = if step.abs() >= tol {
            x + step
        } else {
            x + tol.copysign(step)
        };
        let fu = cost(u);
        if fu <= fx {
            if u >= x {
                a = x;
            } else {
                b = x;
            }
            (v, fv, w, fw, x, fx) = (w, fw, x, fx, u, fu);
        } else {
            if u < x {
                a = u;
            } else {
                b = u;
            }
            if fu <= fw || w == x {
                (v, fv, w, fw) = (w, fw, u, fu);
            } else if fu <= fv || v == x || v == w {
                (v, fv) = (u, fu);
            }
        }
    }
    (x, -fx)
}

/// Praat's Viterbi path through the candidates: local strength (octave cost favouring high
/// frequencies, unvoiced strength rising in quiet frames) minus octave-jump and voicing-change
/// costs. Returns the chosen frequency per frame, 0 where unvoiced.
fn best_path(frames: &[Frame], ceiling: f64) -> Vec<f64> {
    let voiced = |f: f64| f > 0.0 && f < ceiling;
    let mut delta: Vec<Vec<f64>> = frames
        .iter()
        .map(|frame| {
            let quietness = 2.0 - frame.intensity / (SILENCE_THRESHOLD / (1.0 + VOICING_THRESHOLD));
            let unvoiced_strength = VOICING_THRESHOLD + quietness.max(0.0);
            frame
                .candidates
                .iter()
                .map(|c| {
                    if voiced(c.frequency) {
                        c.strength - OCTAVE_COST * (ceiling / c.frequency).log2()
                    } else {
                        unvoiced_strength
                    }
                })
                .collect()
        })
        .collect();
    let mut back: Vec<Vec<usize>> = frames.iter().map(|f| vec![0; f.candidates.len()]).collect();
    for i in 1..frames.len() {
        let (done, rest) = delta.split_at_mut(i);
        let (previous, current) = (&done[i - 1], &mut rest[0]);
        for (c2, candidate) in frames[i].candidates.iter().enumerate() {
            let f2 = candidate.frequency;
            let mut best = (f64::NEG_INFINITY, 0);
            for (c1, earlier) in frames[i - 1].candidates.iter().enumerate() {
                let f1 = earlier.frequency;
                let transition = match (voiced(f1), voiced(f2)) {
                    (false, false) => 0.0,
                    (true, true) => OCTAVE_JUMP_COST * (f1 / f2).log2().abs(),
                    _ => VOICED_UNVOICED_COST,
                };
                let value = previous[c1] - transition + current[c2];
                if value > best.0 {
                    best = (value, c1);
                }
            }
            current[c2] = best.0;
            back[i][c2] = best.1;
        }
    }
    let Some(last) = delta.last() else {
        return Vec::new();
    };
    let mut place = last
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (c, &v)| {
            if v > best.1 { (c, v) } else { best }
        })
        .0;
    let mut path = vec![0.0; frames.len()];
    for i in (0..frames.len()).rev() {
        let f = frames[i].candidates[place].frequency;
        path[i] = if voiced(f) { f } else { 0.0 };
        place = back[i][place];
    }
    path
}
