//! The streaming `Demixer` against the whole-track computation it replaced (kept here as
//! the reference: upstream's algorithm written over one tensor).

use super::*;

fn whole_track_demix(
    mix: &Tensor,
    options: DemixOptions,
    mut separate: impl FnMut(&Tensor) -> Result<Tensor>,
    mut progress: impl FnMut(usize, usize) -> bool,
) -> Result<Tensor> {
    let DemixOptions {
        chunk_size,
        num_overlap,
        batch_size,
    } = options;
    ensure!(
        chunk_size > 0 && num_overlap > 0 && num_overlap <= chunk_size && batch_size > 0,
        "bad demix options {options:?}"
    );
    let size = mix.size();
    let [channels, length] = size[..] else {
        bail!("demix takes a mix as [channels, samples], got {size:?}")
    };
    ensure!(length > 0, "the mix is empty");
    let step = chunk_size / num_overlap;
    let fade_size = chunk_size / 10;
    let border = chunk_size - step;
    let window = windowing_array(chunk_size, fade_size);

    let mix = mix.to_device(tch::Device::Cpu).to_kind(Kind::Float);
    // Reflect the edges so the first and last samples are not only ever seen at a chunk's edge.
    let padded = length > 2 * border && border > 0;
    let mix = if padded {
        mix.reflection_pad1d([border, border])
    } else {
        mix
    };
    let total_length = mix.size()[1];

    let starts: Vec<i64> = (0..)
        .map(|k| k * step)
        .take_while(|&start| start < total_length)
        .collect();
    let mut result: Option<Tensor> = None;
    let counter = Tensor::zeros([total_length], (Kind::Float, tch::Device::Cpu));
    let mut done = 0;
    for batch_starts in starts.chunks(batch_size as usize) {
        let chunks: Vec<Tensor> = batch_starts
            .iter()
            .map(|&start| chunk_at(&mix, start, chunk_size))
            .collect();
        let separated = separate(&Tensor::stack(&chunks, 0))?
            .to_device(tch::Device::Cpu)
            .to_kind(Kind::Float);
        let out = separated.size();
        ensure!(
            out.len() == 4
                && out[0] == chunks.len() as i64
                && out[2] == channels
                && out[3] >= chunk_size.min(total_length),
            "the model gave {out:?} for {} chunks of [{channels}, {chunk_size}]",
            chunks.len()
        );
        let stems = result.get_or_insert_with(|| {
            Tensor::zeros(
                [out[1], channels, total_length],
                (Kind::Float, tch::Device::Cpu),
            )
        });
        let window = batch_window(&window, fade_size, batch_starts, step, total_length);
        for (j, &start) in batch_starts.iter().enumerate() {
            let segment = chunk_size.min(total_length - start);
            let weights = window.narrow(0, 0, segment);
            let mut sum = stems.narrow(2, start, segment);
            sum += separated.get(j as i64).narrow(-1, 0, segment) * &weights;
            let mut count = counter.narrow(0, start, segment);
            count += weights;
        }
        done += batch_starts.len();
        if !progress(done, starts.len()) {
            bail!("separation cancelled");
        }
    }
    let Some(stems) = result else {
        bail!("the mix gave no chunks")
    };
    // Samples no window reached (weight 0 at a fade's end) come out silent, as upstream's
    // nan_to_num makes them.
    let estimate = (stems / &counter).nan_to_num(0.0, None, None);
    Ok(if padded {
        estimate.narrow(2, border, length)
    } else {
        estimate
    })
}

#[test]
fn window_fades_linearly_at_both_ends() {
    let window = Vec::<f32>::try_from(windowing_array(10, 3)).unwrap();
    assert_eq!(window, [0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.0]);
    assert_eq!(
        Vec::<f32>::try_from(windowing_array(4, 0)).unwrap(),
        [1.0; 4]
    );
}

fn ramp(channels: i64, length: i64) -> Tensor {
    Tensor::arange(channels * length, tch::kind::FLOAT_CPU)
        .reshape([channels, length])
        .sin()
}

fn identity(batch: &Tensor) -> Result<Tensor> {
    Ok(batch.unsqueeze(1))
}

#[test]
fn identity_model_gives_back_the_mix() {
    let mix = ramp(2, 1000);
    let options = DemixOptions {
        chunk_size: 100,
        num_overlap: 4,
        batch_size: 3,
    };
    let out = demix(&mix, options, identity, |_, _| true).unwrap();
    assert_eq!(out.size(), [1, 2, 1000]);
    assert!((out.get(0) - &mix).abs().max().double_value(&[]) < 1e-5);
}

#[test]
fn short_mix_without_padding_keeps_upstream_silent_edge() {
    // 100 samples ≤ 2 × border (50): no edge padding; the only batch holds both chunks, so
    // the first chunk keeps its fade-in and sample 0 has no weight.
    let mix = ramp(1, 100) + 2.0;
    let options = DemixOptions {
        chunk_size: 100,
        num_overlap: 2,
        batch_size: 2,
    };
    let out = demix(&mix, options, identity, |_, _| true).unwrap();
    assert_eq!(out.double_value(&[0, 0, 0]), 0.0);
    assert!(
        (out.get(0).narrow(1, 1, 99) - mix.narrow(1, 1, 99))
            .abs()
            .max()
            .double_value(&[])
            < 1e-5
    );
}

#[test]
fn weights_and_progress_follow_the_chunks() {
    let mix = Tensor::ones([1, 400], tch::kind::FLOAT_CPU);
    let options = DemixOptions {
        chunk_size: 100,
        num_overlap: 2,
        batch_size: 2,
    };
    let mut seen = Vec::new();
    // A model that outputs 1 for every chunk but the second, which outputs 3.
    let mut calls = 0;
    let out = demix(
        &mix,
        options,
        |batch| {
            let out = batch.ones_like().unsqueeze(1);
            if calls == 0 {
                let _ = out.get(1).fill_(3.0);
            }
            calls += 1;
            Ok(out)
        },
        |done, total| {
            seen.push((done, total));
            true
        },
    )
    .unwrap();
    // Padded to 500 samples: chunks start at 0, 50, …, 450.
    assert_eq!(seen, [(2, 10), (4, 10), (6, 10), (8, 10), (10, 10)]);
    // Output sample 0 is padded sample 50: chunk 0 at weight 1 (middle), chunk 1 (value 3)
    // at weight 0 (its fade-in starts there).
    assert!((out.double_value(&[0, 0, 0]) - 1.0).abs() < 1e-6);
    // Padded sample 55: chunk 1's fade-in weight is 5/9.
    let expected = (1.0 + 3.0 * 5.0 / 9.0) / (1.0 + 5.0 / 9.0);
    assert!((out.double_value(&[0, 0, 5]) - expected).abs() < 1e-5);
}

#[test]
fn cancelling_stops_with_an_error() {
    let mix = ramp(2, 1000);
    let options = DemixOptions {
        chunk_size: 100,
        num_overlap: 2,
        batch_size: 1,
    };
    let error = demix(&mix, options, identity, |done, _| done < 3).unwrap_err();
    assert!(error.to_string().contains("cancelled"));
}

#[test]
fn streaming_equals_the_whole_track_for_any_block_size() {
    let mix = ramp(2, 3001);
    let cases = [
        (100, 4, 3),
        (100, 2, 2),
        (100, 1, 2),
        (64, 3, 1),
        (100, 4, 40),
    ];
    for (chunk_size, num_overlap, batch_size) in cases {
        let options = DemixOptions {
            chunk_size,
            num_overlap,
            batch_size,
        };
        // A model whose output depends on the chunk, its position and the batch.
        let mut model =
            |batch: &Tensor| Ok((batch * 0.5 + batch.cumsum(2, Kind::Float) * 1e-3).unsqueeze(1));
        let whole = whole_track_demix(&mix, options, model, |_, _| true).unwrap();
        for block in [1, 7, 99, 250, 3001] {
            let mut demixer = Demixer::new(options, 2, None).unwrap();
            let (mut parts, mut calls) = (Vec::new(), 0);
            let mut progress = |_, _| {
                calls += 1;
                true
            };
            let mut start = 0;
            while start < 3001 {
                let size = block.min(3001 - start);
                let part = mix.narrow(1, start, size);
                parts.extend(demixer.push(&part, &mut model, &mut progress).unwrap());
                start += size;
            }
            parts.extend(demixer.finish(&mut model, &mut progress).unwrap());
            let streamed = Tensor::cat(&parts, 2);
            assert_eq!(streamed.size(), whole.size(), "{options:?} block {block}");
            let error = (&streamed - &whole).abs().max().double_value(&[]);
            assert_eq!(error, 0.0, "{options:?} block {block}");
        }
    }
}

#[test]
fn short_mixes_match_the_whole_track() {
    let options = DemixOptions {
        chunk_size: 100,
        num_overlap: 4,
        batch_size: 2,
    };
    for length in [1, 30, 50, 150, 151, 152, 199] {
        let mix = ramp(1, length) + 1.0;
        let whole = whole_track_demix(&mix, options, identity, |_, _| true).unwrap();
        let ours = demix(&mix, options, identity, |_, _| true).unwrap();
        assert_eq!(
            (&ours - &whole).abs().max().double_value(&[]),
            0.0,
            "{length}"
        );
    }
}

#[test]
fn holds_a_bounded_window_of_a_long_stream() {
    let options = DemixOptions {
        chunk_size: 100,
        num_overlap: 2,
        batch_size: 2,
    };
    let mut demixer = Demixer::new(options, 1, None).unwrap();
    let mut out = 0;
    for _ in 0..500 {
        let block = Tensor::ones([1, 64], tch::kind::FLOAT_CPU);
        if let Some(part) = demixer
            .push(&block, &mut identity, &mut |_, _| true)
            .unwrap()
        {
            out += part.size()[2];
        }
        assert!(
            demixer.input.size()[1] <= 100 + 2 * 64 + 100,
            "{:?}",
            demixer.input.size()
        );
        assert!(
            demixer.counts.size()[0] <= 200,
            "{:?}",
            demixer.counts.size()
        );
    }
    out += demixer
        .finish(&mut identity, &mut |_, _| true)
        .unwrap()
        .unwrap()
        .size()[2];
    assert_eq!(out, 500 * 64);
}
