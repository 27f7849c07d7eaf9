"""Times rvc-next 0.2.16's training step (engine/train/loop.py `_train`'s body: the same modules,
losses, AdamW, GradScaler and autocast) on the shapes of crates/timbre-nn/benches/train_step.rs:
the v2 40k generator with pitch and MultiPeriodDiscriminatorV2, batches of 3.7 s pieces of a
gliding sawtooth with random features. fp16 autocast on CUDA, fp32 on the CPU, as rvc-next picks.

python bench/train_reference.py [--batches 4,8] [--steps 5] [--threads 2] [--profile TRACE]
(--profile: then three more steps of the last batch size under torch's profiler, each a named
range, their Chrome trace to TRACE, which bench/profile_summary.py reads.)
"""

import argparse
import time

import torch
import torch.nn.functional as F

from rvc_next.engine.models import commons
from rvc_next.engine.models.synthesizer import MultiPeriodDiscriminatorV2, SynthesizerTrnMs768NSFsid
from rvc_next.engine.train.hparams import CONFIGS
from rvc_next.engine.train.losses import discriminator_loss, feature_loss, generator_loss, kl_loss
from rvc_next.engine.train.mel import mel_spectrogram_torch, spec_to_mel_torch, spectrogram_torch

PIECE_FRAMES = 370


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="4,8")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    is_half = cuda
    hps = CONFIGS["v1/40k"]  # v2 at 40k uses v1's file, as RVC does
    train, data, model = hps["train"], hps["data"], dict(hps["model"])
    use_spectral_norm = model.pop("use_spectral_norm")
    hop = data["hop_length"]
    print(f"reference training step (rvc-next 0.2.16): v2 40k, {device}, {'fp16' if is_half else 'fp32'}")
    for size in [int(b) for b in args.batches.split(",")]:
        torch.manual_seed(train["seed"])
        net_g = SynthesizerTrnMs768NSFsid(data["filter_length"] // 2 + 1, train["segment_size"] // hop, **model, is_half=is_half, sr=40000).to(device)
        net_d = MultiPeriodDiscriminatorV2(use_spectral_norm).to(device)
        optim_g = torch.optim.AdamW(net_g.parameters(), train["learning_rate"], betas=train["betas"], eps=train["eps"])
        optim_d = torch.optim.AdamW(net_d.parameters(), train["learning_rate"], betas=train["betas"], eps=train["eps"])
        scaler = torch.amp.GradScaler(device, enabled=is_half)

        samples = PIECE_FRAMES * hop
        t = torch.arange(samples, dtype=torch.float64) / 40000
        wave = torch.stack([(((t * (110 + 20 * i)) % 1) * 0.6 - 0.3).float() for i in range(size)])
        spec = spectrogram_torch(wave, data["filter_length"], 40000, hop, data["win_length"])
        hz = (torch.arange(size, dtype=torch.float32) * 20 + 110).unsqueeze(1).expand(size, PIECE_FRAMES).contiguous()
        pitch = ((hz.log() - torch.log(torch.tensor(50.0))) / (torch.log(torch.tensor(1100.0)) - torch.log(torch.tensor(50.0))) * 254 + 1).long()
        lengths = torch.full((size,), PIECE_FRAMES, dtype=torch.long)
        phone = torch.randn(size, PIECE_FRAMES, 768)
        batch = [x.to(device) for x in (phone, lengths, pitch, hz, spec, lengths.clone(), wave.unsqueeze(1), torch.zeros(size, dtype=torch.long))]

        def step() -> float:
            phone, phone_lengths, pitch, pitchf, spec, spec_lengths, wave, sid = batch
            with torch.autocast(device, dtype=torch.float16, enabled=is_half):
                y_hat, ids_slice, x_mask, z_mask, (z, z_p, m_p, logs_p, m_q, logs_q) = net_g(phone, phone_lengths, pitch, pitchf, spec, spec_lengths, sid)
                mel = spec_to_mel_torch(spec, data["filter_length"], data["n_mel_channels"], 40000, data["mel_fmin"], data["mel_fmax"])
                y_mel = commons.slice_segments(mel, ids_slice, train["segment_size"] // hop)
                with torch.autocast(device, enabled=False):
                    y_hat_mel = mel_spectrogram_torch(y_hat.float().squeeze(1), data["filter_length"], data["n_mel_channels"], 40000, hop, data["win_length"], data["mel_fmin"], data["mel_fmax"])
                if is_half:
                    y_hat_mel = y_hat_mel.half()
                wave = commons.slice_segments(wave, ids_slice * hop, train["segment_size"])
                y_d_hat_r, y_d_hat_g, _, _ = net_d(wave, y_hat.detach())
                with torch.autocast(device, enabled=False):
                    loss_disc, _, _ = discriminator_loss(y_d_hat_r, y_d_hat_g)
            optim_d.zero_grad()
            scaler.scale(loss_disc).backward()
            scaler.unscale_(optim_d)
            commons.clip_grad_value_(net_d.parameters(), None)
            scaler.step(optim_d)
            with torch.autocast(device, dtype=torch.float16, enabled=is_half):
                y_d_hat_r, y_d_hat_g, fmap_r, fmap_g = net_d(wave, y_hat)
                with torch.autocast(device, enabled=False):
                    loss_mel = F.l1_loss(y_mel, y_hat_mel) * train["c_mel"]
                    loss_kl = kl_loss(z_p, logs_q, m_p, logs_p, z_mask) * train["c_kl"]
                    loss_fm = feature_loss(fmap_r, fmap_g)
                    loss_gen, _ = generator_loss(y_d_hat_g)
                    loss_gen_all = loss_gen + loss_fm + loss_mel + loss_kl
            optim_g.zero_grad()
            scaler.scale(loss_gen_all).backward()
            scaler.unscale_(optim_g)
            commons.clip_grad_value_(net_g.parameters(), None)
            scaler.step(optim_g)
            scaler.update()
            return loss_mel.item()  # a host read, as rvc-next's logging makes each step

        step()
        started = time.perf_counter()
        for _ in range(args.steps):
            mel = step()
        per_step = (time.perf_counter() - started) / args.steps
        peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else float("nan")
        print(f"  batch {size}: {per_step:.3f} s per step ({size / per_step:.1f} pieces/s), mel {mel:.1f}; peak CUDA allocated {peak:.0f} MiB")
    if args.profile:
        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
        with torch.profiler.profile(activities=activities) as profiler:
            for _ in range(3):
                with torch.profiler.record_function("training step"):
                    step()
        profiler.export_chrome_trace(args.profile)


if __name__ == "__main__":
    main()
