//! Matches scipy.signal `butter` (zpk design + bilinear transform), `lfilter`, `lfilter_zi` and
//! `filtfilt` (defaults: odd padding, padlen = 3·max(len(a), len(b))), as RVC's
//! `infer/modules/vc/pipeline.py` uses them to high-pass its input.

use timbre_fft::num_complex::Complex64;

/// RVC's input filter: `scipy.signal.butter(N=5, Wn=48, btype="high", fs=16000)`.
pub const RVC_HIGHPASS_ORDER: usize = 5;
/// Cutoff of RVC's input high-pass, in Hz.
pub const RVC_HIGHPASS_CUTOFF_HZ: f64 = 48.0;
/// Sample rate RVC's pipeline filters at, in Hz.
pub const RVC_SAMPLE_RATE: f64 = 16_000.0;

/// Transfer-function coefficients `(b, a)` of a digital Butterworth high-pass, exactly as
/// `scipy.signal.butter(order, cutoff_hz, btype="high", fs=fs)` computes them; `None` unless
/// `0 < cutoff_hz < fs / 2`.
pub fn butter_highpass(order: usize, cutoff_hz: f64, fs: f64) -> Option<(Vec<f64>, Vec<f64>)> {
    butter(order, cutoff_hz, fs, Band::High)
}

/// As [`butter_highpass`], for `btype="low"`.
pub fn butter_lowpass(order: usize, cutoff_hz: f64, fs: f64) -> Option<(Vec<f64>, Vec<f64>)> {
    butter(order, cutoff_hz, fs, Band::Low)
}

#[derive(Clone, Copy, PartialEq)]
enum Band {
    Low,
    High,
}

/// scipy's `iirfilter` path for Butterworth filters: analog prototype poles, frequency
/// transform, bilinear transform, expansion into polynomials, in scipy's operation order.
fn butter(order: usize, cutoff_hz: f64, fs: f64, band: Band) -> Option<(Vec<f64>, Vec<f64>)> {
    let normalized = 2.0 * cutoff_hz / fs;
    if !(normalized > 0.0 && normalized < 1.0) {
        return None;
    }
    // scipy designs in units where fs = 2, pre-warping the cutoff for the bilinear transform.
    let design_fs = 2.0;
    let warped = 2.0 * design_fs * (std::f64::consts::PI * normalized / design_fs).tan();

    let prototype_poles: Vec<Complex64> = (0..order)
        .map(|i| {
            let m = 2.0 * i as f64 - order as f64 + 1.0;
            -Complex64::from_polar(1.0, std::f64::consts::PI * m / (2.0 * order as f64))
        })
        .collect();
    let one = Complex64::new(1.0, 0.0);

    // Low-pass scales the poles by `warped` (zeros stay at infinity); high-pass inverts them
    // around it and moves the zeros from infinity to s = 0.
    let (analog_poles, analog_gain): (Vec<Complex64>, f64) = match band {
        Band::Low => (
            prototype_poles
                .iter()
                .map(|&p| Complex64::new(warped, 0.0) * p)
                .collect(),
            warped.powf(order as f64),
        ),
        Band::High => (
            prototype_poles
                .iter()
                .map(|&p| divide(Complex64::new(warped, 0.0), p))
                .collect(),
            divide(one, product(prototype_poles.iter().map(|p| -p))).re,
        ),
    };

    // Bilinear transform: zeros at s = 0 land on z = 1, zeros at infinity on z = −1.
    let fs2 = Complex64::new(2.0 * design_fs, 0.0);
    let digital_poles: Vec<Complex64> = analog_poles
        .iter()
        .map(|&p| divide(fs2 + p, fs2 - p))
        .collect();
    let (digital_zero, finite_zero_term) = match band {
        Band::Low => (-one, one),
        Band::High => (one, product(std::iter::repeat_n(fs2, order))),
    };
    let digital_gain = analog_gain
        * divide(
            finite_zero_term,
            product(analog_poles.iter().map(|&p| fs2 - p)),
        )
        .re;

    let b = polynomial_from_roots(&vec![digital_zero; order])
        .into_iter()
        .map(|c| digital_gain * c)
        .collect();
    let a = polynomial_from_roots(&digital_poles);
    Some((b, a))
}

/// Complex division the way numpy's ufunc does it (Smith's method), so the design reproduces
/// scipy's coefficients bit for bit rather than merely to rounding.
fn divide(n: Complex64, d: Complex64) -> Complex64 {
    if d.re.abs() >= d.im.abs() {
        let ratio = d.im / d.re;
        let scale = 1.0 / (d.re + d.im * ratio);
        Complex64::new((n.re + n.im * ratio) * scale, (n.im - n.re * ratio) * scale)
    } else {
        let ratio = d.re / d.im;
        let scale = 1.0 / (d.im + d.re * ratio);
        Complex64::new((n.re * ratio + n.im) * scale, (n.im * ratio - n.re) * scale)
    }
}

fn product(values: impl Iterator<Item = Complex64>) -> Complex64 {
    values.fold(Complex64::new(1.0, 0.0), |acc, v| acc * v)
}

/// Real coefficients of ∏(x − root), highest power first (roots come in conjugate pairs, so the
/// imaginary parts cancel). Each step convolves with `[1, −root]`, accumulating real and
/// imaginary parts in the order numpy's `convolve` does, which makes `numpy.poly` reproducible.
fn polynomial_from_roots(roots: &[Complex64]) -> Vec<f64> {
    let mut coefficients = vec![Complex64::new(1.0, 0.0)];
    for &root in roots {
        let minus_root = -root;
        let mut next = Vec::with_capacity(coefficients.len() + 1);
        next.push(coefficients[0]);
        for i in 1..=coefficients.len() {
            let current = coefficients.get(i).copied().unwrap_or_default();
            let previous = coefficients[i - 1];
            next.push(Complex64::new(
                (current.re + previous.re * minus_root.re) - previous.im * minus_root.im,
                (current.im + previous.re * minus_root.im) + previous.im * minus_root.re,
            ));
        }
        coefficients = next;
    }
    coefficients.into_iter().map(|c| c.re).collect()
}

/// `(b, a)` normalized so `a[0] == 1` and padded to equal length, as scipy's `lfilter` and
/// `lfilter_zi` see them; `None` when `a` has no nonzero coefficient.
pub(super) fn normalized(b: &[f64], a: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
    let first = a.iter().position(|&c| c != 0.0)?;
    let a = &a[first..];
    let lead = a[0];
    let n = a.len().max(b.len()).max(1);
    let mut bn: Vec<f64> = b.iter().map(|c| c / lead).collect();
    let mut an: Vec<f64> = a.iter().map(|c| c / lead).collect();
    bn.resize(n, 0.0);
    an.resize(n, 0.0);
    Some((bn, an))
}

/// Direct form II transposed filtering (`scipy.signal.lfilter`) of normalized, equal-length
/// coefficients; `state` (length `b.len() - 1`) is the initial state and is left as the final one.
pub(super) fn lfilter_in_place(b: &[f64], a: &[f64], state: &mut [f64], x: &mut [f64]) {
    let order = state.len();
    for sample in x.iter_mut() {
        let input = *sample;
        let output = b[0] * input + state.first().copied().unwrap_or(0.0);
        for i in 0..order {
            let next = state.get(i + 1).copied().unwrap_or(0.0);
            state[i] = b[i + 1] * input + next - a[i + 1] * output;
        }
        *sample = output;
    }
}

/// Initial state for a step response in steady state (`scipy.signal.lfilter_zi`): the state of
/// the transposed direct form after a unit step has settled at the DC gain `g = Σb / Σa`, i.e.
/// `zi[k] = Σ_{j>k} (b[j] − a[j]·g)`.
///
/// scipy gets the same vector by an LU solve of `(I − Aᵀ) zi = b[1:] − a[1:]·b[0]`, which is
/// ill-conditioned for low cutoffs: for RVC's 48 Hz high-pass its answer is off by ~2e-7 of the
/// exact solution, while this closed form is exact to rounding. A pole at z = 1 (Σa = 0) has no
/// steady state: zeros.
pub fn lfilter_zi(b: &[f64], a: &[f64]) -> Vec<f64> {
    let Some((b, a)) = normalized(b, a) else {
        return Vec::new();
    };
    let denominator = compensated_sum(&a);
    if denominator == 0.0 {
        return vec![0.0; b.len() - 1];
    }
    let dc_gain = compensated_sum(&b) / denominator;
    let mut zi = vec![0.0; b.len() - 1];
    let mut tail = 0.0;
    for k in (0..zi.len()).rev() {
        tail += b[k + 1] - a[k + 1] * dc_gain;
        zi[k] = tail;
    }
    zi
}

/// Neumaier summation: coefficients of a filter with poles near z = 1 nearly cancel.
fn compensated_sum(values: &[f64]) -> f64 {
    let (mut sum, mut compensation) = (0.0f64, 0.0f64);
    for &v in values {
        let t = sum + v;
        compensation += if sum.abs() >= v.abs() {
            (sum - t) + v
        } else {
            (v - t) + sum
        };
        sum = t;
    }
    sum + compensation
}

/// Zero-phase filtering exactly as `scipy.signal.filtfilt(b, a, x)` with its defaults, in f64:
/// [`filtfilt_in_place`] on a copy.
pub fn filtfilt(b: &[f64], a: &[f64], x: &[f32]) -> Vec<f32> {
    let mut out = x.to_vec();
    filtfilt_in_place(b, a, &mut out);
    out
}

/// Frames of the extended signal filtered at a time by [`filtfilt_in_place`].
const FILTFILT_BLOCK: usize = 1 << 16;

/// [`filtfilt`] over `x` in place, holding a block of the forward pass at a time rather than the
/// whole padded signal in f64 (which is four times the input's size): the forward pass keeps its
/// state at the start of each block, and the backward pass, going from the last block to the
/// first, recomputes each block's forward output from that state. The arithmetic and its order
/// are those of the whole-signal run, so the result is the same to the last bit.
///
/// Where scipy refuses a signal no longer than the padding (3·max(len(a), len(b)) samples), the
/// padding shrinks to `len − 1` instead. Non-finite samples are read as silence so one bad sample
/// cannot poison the whole recursive output. An `a` without a nonzero coefficient is no filter:
/// the input stays unchanged.
fn filtfilt_in_place(b: &[f64], a: &[f64], x: &mut [f32]) {
    filtfilt_in_blocks(b, a, x, FILTFILT_BLOCK);
}

fn filtfilt_in_blocks(b: &[f64], a: &[f64], x: &mut [f32], block: usize) {
    let Some((bn, an)) = normalized(b, a) else {
        return;
    };
    if x.is_empty() {
        return;
    }
    let n = x.len();
    let padlen = (3 * a.len().max(b.len())).min(n - 1);
    let sample = |v: f32| if v.is_finite() { f64::from(v) } else { 0.0 };
    // scipy's `odd_ext`: `padlen` samples point-reflected about each end, kept aside since the
    // backward pass overwrites the input they come from.
    let (first, last) = (sample(x[0]), sample(x[n - 1]));
    let left: Vec<f64> = (1..=padlen)
        .rev()
        .map(|i| 2.0 * first - sample(x[i]))
        .collect();
    let right: Vec<f64> = (1..=padlen)
        .map(|i| 2.0 * last - sample(x[n - 1 - i]))
        .collect();
    let total = n + 2 * padlen;
    // The extended signal's samples `start..start + out.len()`, read before they are overwritten.
    let extended = |x: &[f32], start: usize, out: &mut Vec<f64>, len: usize| {
        out.clear();
        out.extend((start..start + len).map(|i| {
            if i < padlen {
                left[i]
            } else if i < padlen + n {
                sample(x[i - padlen])
            } else {
                right[i - padlen - n]
            }
        }));
    };
    let zi = lfilter_zi(&bn, &an);
    let mut buffer = Vec::with_capacity(block.min(total));
    extended(x, 0, &mut buffer, 1);
    let mut state: Vec<f64> = zi.iter().map(|z| z * buffer[0]).collect();
    let starts: Vec<usize> = (0..total).step_by(block).collect();
    let mut checkpoints = Vec::with_capacity(starts.len());
    let mut forward_last = 0.0;
    for &start in &starts {
        checkpoints.push(state.clone());
        let len = block.min(total - start);
        extended(x, start, &mut buffer, len);
        lfilter_in_place(&bn, &an, &mut state, &mut buffer);
        forward_last = buffer[len - 1];
    }
    let mut backward: Vec<f64> = zi.iter().map(|z| z * forward_last).collect();
    for (&start, checkpoint) in starts.iter().zip(checkpoints).rev() {
        let len = block.min(total - start);
        extended(x, start, &mut buffer, len);
        let mut state = checkpoint;
        lfilter_in_place(&bn, &an, &mut state, &mut buffer);
        buffer.reverse();
        lfilter_in_place(&bn, &an, &mut backward, &mut buffer);
        for (offset, value) in buffer.iter().rev().enumerate() {
            let i = start + offset;
            if (padlen..padlen + n).contains(&i) {
                x[i - padlen] = *value as f32;
            }
        }
    }
}

/// RVC's input conditioning: the 5th-order 48 Hz Butterworth high-pass at 16 kHz, run forwards
/// and backwards.
pub fn rvc_highpass(audio_16k: &[f32]) -> Vec<f32> {
    let mut out = audio_16k.to_vec();
    rvc_highpass_in_place(&mut out);
    out
}

/// [`rvc_highpass`] in place, for inputs too long to hold twice.
pub fn rvc_highpass_in_place(audio_16k: &mut [f32]) {
    let (b, a) = butter_highpass(RVC_HIGHPASS_ORDER, RVC_HIGHPASS_CUTOFF_HZ, RVC_SAMPLE_RATE)
        .expect("48 Hz lies between 0 and the 8 kHz Nyquist frequency");
    filtfilt_in_place(&b, &a, audio_16k);
}

#[cfg(test)]
mod tests {
    use super::*;

    // scipy 1.17.1: signal.butter(5, 48, btype="high", fs=16000), RVC's (bh, ah).
    const SCIPY_HIGHPASS_B: [f64; 6] = [
        0.9699606451838447,
        -4.849803225919223,
        9.699606451838447,
        -9.699606451838447,
        4.849803225919223,
        -0.9699606451838447,
    ];
    const SCIPY_HIGHPASS_A: [f64; 6] = [
        1.0,
        -4.939001819168364,
        9.757863526739543,
        -9.639544849413458,
        4.761506797356209,
        -0.9408236532054606,
    ];
    // scipy 1.17.1: signal.butter(4, 1650, btype="low", fs=16000).
    const SCIPY_LOWPASS_B: [f64; 5] = [
        0.0053561368901922255,
        0.021424547560768902,
        0.03213682134115335,
        0.021424547560768902,
        0.0053561368901922255,
    ];
    const SCIPY_LOWPASS_A: [f64; 5] = [
        1.0,
        -2.3192063217549928,
        2.2349793543740115,
        -1.0075092500222809,
        0.17743440764633794,
    ];

    fn test_signal(len: usize) -> Vec<f32> {
        (0..len)
            .map(|i| {
                let i = i as f64;
                (0.4 * (0.07 * i).sin() + 0.25 * (0.41 * i + 0.3).cos() + 0.1) as f32
            })
            .collect()
    }

    fn assert_close(actual: &[f32], expected: &[f64], tolerance: f64) {
        assert_eq!(actual.len(), expected.len());
        for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
            assert!(
                (f64::from(a) - e).abs() < tolerance,
                "sample {i}: {a} vs {e}"
            );
        }
    }

    #[test]
    fn butterworth_designs_match_scipy() {
        let (b, a) = butter_highpass(5, 48.0, 16000.0).unwrap();
        let (lb, la) = butter_lowpass(4, 1650.0, 16000.0).unwrap();
        for (ours, scipy) in [
            (&b[..], &SCIPY_HIGHPASS_B[..]),
            (&a, &SCIPY_HIGHPASS_A),
            (&lb, &SCIPY_LOWPASS_B),
            (&la, &SCIPY_LOWPASS_A),
        ] {
            assert_eq!(ours.len(), scipy.len());
            for (o, s) in ours.iter().zip(scipy) {
                assert!((o - s).abs() < 1e-12, "{o} vs {s}");
            }
        }
        for cutoff in [0.0, -1.0, 8000.0, 9000.0, f64::NAN] {
            assert_eq!(butter_highpass(5, cutoff, 16000.0), None);
        }
    }

    #[test]
    fn steady_state_is_exact_where_scipys_lu_solve_drifts() {
        // The high-pass settles at output 0, so zi[k] is the tail sum of b (exact to rounding).
        let zi = lfilter_zi(&SCIPY_HIGHPASS_B, &SCIPY_HIGHPASS_A);
        let tail_sums: Vec<f64> = (1..6).map(|k| SCIPY_HIGHPASS_B[k..].iter().sum()).collect();
        // scipy 1.17.1 lfilter_zi(bh, ah), off by ~2e-7 relative.
        let scipy = [
            -0.9699604796995847,
            3.8798419288925783,
            -5.819762908173043,
            3.879841948472456,
            -0.9699604894923387,
        ];
        for ((z, exact), s) in zi.iter().zip(&tail_sums).zip(scipy) {
            assert!((z - exact).abs() < 1e-12, "{z} vs {exact}");
            assert!((z - s).abs() < 1e-6 * s.abs(), "{z} vs {s}");
        }
        // A step through the filter started from zi stays settled.
        let (b, a) = normalized(&SCIPY_LOWPASS_B, &SCIPY_LOWPASS_A).unwrap();
        let mut state = lfilter_zi(&b, &a);
        let mut step = vec![1.0; 50];
        lfilter_in_place(&b, &a, &mut state, &mut step);
        assert!(step.iter().all(|y| (y - 1.0).abs() < 1e-12), "{step:?}");
    }

    #[test]
    fn filtfilt_matches_scipy() {
        // scipy 1.17.1: signal.filtfilt(bh, ah, x) with x the float32 test signal.
        let expected = [
            -0.09738734432350242,
            -0.12058243670435495,
            -0.17515357190917025,
            -0.24785821689580792,
            -0.3224597792115762,
            -0.38243933787388207,
            -0.4137540241982449,
            -0.40718445467723874,
            -0.35988208884961326,
            -0.27585995327940555,
            -0.16534513847429824,
            -0.04310065326441881,
            0.0740058608961337,
            0.16978293353969692,
            0.2313852563104788,
            0.25143045357973864,
            0.22921081613491173,
            0.17080088862679202,
            0.08804156906752968,
            -0.003430091836375694,
            -0.08677860905111574,
            -0.14676528157292962,
            -0.17227694822085385,
            -0.15816958803765238,
            -0.10612069544801571,
            -0.024349435386822,
            0.07374890017728372,
            0.17182829232393104,
            0.25330794148964786,
            0.30412844691178315,
            0.3150918562449978,
            0.28339708227567195,
            0.21311668154051208,
            0.1145351544276751,
            0.0024594227834302262,
            -0.10621941622648678,
            -0.19530867228835064,
            -0.2519795656883947,
            -0.2688743100449919,
            -0.24530530454217464,
            -0.18734790749391111,
            -0.10681142814195,
            -0.019258999686389056,
            0.0585952746606396,
            0.11168040967347603,
            0.12909061286443396,
            0.10591723430635805,
            0.044086659991945776,
        ];
        let x = test_signal(48);
        assert_close(&rvc_highpass(&x), &expected, 1e-6);
        // filtfilt(bl, al, x)[:8] for the low-pass.
        let lowpass_head = [
            0.3387910455068142,
            0.285286713262884,
            0.2294137952800289,
            0.17129948379955776,
            0.11548636482648879,
            0.07061451192523777,
            0.04726407024545705,
            0.05478618609476111,
        ];
        let (b, a) = butter_lowpass(4, 1650.0, 16000.0).unwrap();
        assert_close(&filtfilt(&b, &a, &x)[..8], &lowpass_head, 1e-6);
    }

    #[test]
    fn filtering_block_by_block_gives_the_whole_signals_bits() {
        let (b, a) = butter_highpass(5, 48.0, 16_000.0).unwrap();
        let x: Vec<f32> = (0..10_007)
            .map(|i| ((i as f32 * 0.013).sin() + (i as f32 * 0.31).cos() * 0.3) * 0.5)
            .collect();
        let mut whole = x.clone();
        filtfilt_in_blocks(&b, &a, &mut whole, usize::MAX);
        for block in [1, 7, 18, 4096] {
            let mut blocked = x.clone();
            filtfilt_in_blocks(&b, &a, &mut blocked, block);
            assert_eq!(blocked, whole, "blocks of {block}");
        }
        assert_eq!(filtfilt(&b, &a, &x), whole);
    }

    #[test]
    fn short_signals_shrink_the_padding_instead_of_failing() {
        // Ten samples are fewer than scipy's 18 of padding: filtfilt(bh, ah, x[:10], padlen=9).
        let expected = [
            0.03279256188566018,
            0.024586864268176634,
            -0.014774139667953823,
            -0.07204727218989276,
            -0.13099533034850097,
            -0.17509881738487482,
            -0.19031432408464377,
            -0.1674219621835727,
            -0.10357272276369878,
            -0.0027792007597937374,
        ];
        assert_close(&rvc_highpass(&test_signal(10)), &expected, 1e-6);
        assert!(rvc_highpass(&[]).is_empty());
        let single = rvc_highpass(&[0.5]);
        assert_eq!(single.len(), 1);
        assert!(single[0].abs() < 1e-6, "a lone sample is DC: {single:?}");
    }

    #[test]
    fn non_finite_samples_are_filtered_as_silence() {
        let mut x = test_signal(200);
        x[50] = f32::NAN;
        x[51] = f32::INFINITY;
        let filtered = rvc_highpass(&x);
        x[50] = 0.0;
        x[51] = 0.0;
        assert_eq!(filtered, rvc_highpass(&x));
        assert!(filtered.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn degenerate_denominators_pass_the_signal_through() {
        let x = test_signal(30);
        assert_eq!(filtfilt(&[1.0], &[0.0, 0.0], &x), x);
        assert_eq!(filtfilt(&[1.0], &[], &x), x);
        // Leading zeros in `a` are dropped, as scipy's lfilter_zi does.
        assert_eq!(filtfilt(&[2.0], &[0.0, 2.0], &x).len(), 30);
        assert!(
            lfilter_zi(&[1.0, -1.0], &[1.0, -1.0])
                .iter()
                .all(|&z| z == 0.0)
        );
    }
}
