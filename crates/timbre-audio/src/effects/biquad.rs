//! Second-order sections from the Audio EQ Cookbook (R. Bristow-Johnson), run in f64.

use std::f64::consts::PI;

/// Normalised coefficients (`a0` = 1) of `H(z) = (b0 + b1 z⁻¹ + b2 z⁻²) / (1 + a1 z⁻¹ + a2 z⁻²)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Coefficients {
    b: [f64; 3],
    a: [f64; 2],
}

impl Coefficients {
    fn normalised(b: [f64; 3], a0: f64, a1: f64, a2: f64) -> Self {
        Coefficients {
            b: b.map(|x| x / a0),
            a: [a1 / a0, a2 / a0],
        }
    }

    pub fn low_pass(cutoff_hz: f64, q: f64, rate: f64) -> Self {
        let (cos, alpha) = angles(cutoff_hz, q, rate);
        let side = (1.0 - cos) / 2.0;
        Self::normalised(
            [side, 1.0 - cos, side],
            1.0 + alpha,
            -2.0 * cos,
            1.0 - alpha,
        )
    }

    pub fn peaking(frequency_hz: f64, gain_db: f64, q: f64, rate: f64) -> Self {
        let (cos, alpha) = angles(frequency_hz, q, rate);
        let a = 10f64.powf(gain_db / 40.0);
        Self::normalised(
            [1.0 + alpha * a, -2.0 * cos, 1.0 - alpha * a],
            1.0 + alpha / a,
            -2.0 * cos,
            1.0 - alpha / a,
        )
    }

    /// `|H(e^{jω})|` at `frequency_hz`.
    #[cfg(test)]
    pub fn magnitude(&self, frequency_hz: f64, rate: f64) -> f64 {
        use timbre_fft::num_complex::Complex64;
        let z1 = Complex64::from_polar(1.0, -2.0 * PI * frequency_hz / rate);
        let z2 = z1 * z1;
        let numerator = self.b[0] + self.b[1] * z1 + self.b[2] * z2;
        let denominator = 1.0 + self.a[0] * z1 + self.a[1] * z2;
        (numerator / denominator).norm()
    }
}

/// The running state of one section over one channel.
#[derive(Debug, Clone, Copy, Default)]
struct Section {
    s1: f64,
    s2: f64,
}

impl Section {
    fn step(&mut self, c: &Coefficients, x: f64) -> f64 {
        let y = c.b[0] * x + self.s1;
        self.s1 = c.b[1] * x - c.a[0] * y + self.s2;
        self.s2 = c.b[2] * x - c.a[1] * y;
        y
    }
}

/// `(cos ω0, α)` of the cookbook for a centre or corner frequency and a Q.
fn angles(frequency_hz: f64, q: f64, rate: f64) -> (f64, f64) {
    let w0 = 2.0 * PI * frequency_hz / rate;
    (w0.cos(), w0.sin() / (2.0 * q))
}

/// One section run over each channel, its state carried from block to block.
pub(super) struct Filter {
    coefficients: Coefficients,
    sections: Vec<Section>,
}

impl Filter {
    /// Starts at rest.
    pub fn new(coefficients: Coefficients, channels: usize) -> Self {
        Filter {
            coefficients,
            sections: vec![Section::default(); channels],
        }
    }

    /// Filters the next block in place.
    pub fn process(&mut self, block: &mut [Vec<f32>]) {
        for (section, channel) in self.sections.iter_mut().zip(block) {
            for x in channel {
                *x = section.step(&self.coefficients, f64::from(*x)) as f32;
            }
        }
    }
}
