"""Random-weight Applio voices with the MRF HiFi-GAN, RefineGAN and HiFi-GAN vocoders, and what Applio's own
code gives for them: the `applio-parity` fixture set beside this script (manifest.json, one folder
per case), in the format of ../shared/fixtures/rvc-parity (`kind: synthesizer`).

    PYTHONPATH=<Applio checkout>:<torchaudio 2.11.0, installed with --no-deps> \
        .venv/bin/python crates/timbre-nn/tests/data/applio-parity/make_fixtures.py [OUT] [--every-rate]

Applio is IAHispano/Applio at b9c0ccb (3.6.4; rvc/lib/algorithm); torchaudio only for RefineGAN's
`torchaudio.functional.resample`. Each voice is saved as Applio's `extract_model` saves one (fp16
weights without enc_q, weight_g/weight_v names, its 18-item config and its entries), loaded back as
Applio's infer.py loads it (`Synthesizer(*config, vocoder=…)`, `load_state_dict(strict=False)`) and
run with `net_g.infer` in float32 with every random draw zero (the prior's noise, the sine
generators' initial phases and noise, RefineGAN's AdaIN noise).

Sizes are small except where Applio's code fixes them. RefineGAN's are fixed: its conditioning takes
256 channels (so gin_channels 256), its pitch path starts at 16 channels and doubles per rate, which
only fits `upsample_initial_channel` 512: 13 M parameters, 26 MB in fp16. So that its fixture stays
small in git, RefineGAN's weights are signed powers of two (±2^-k · a tensor's scale; random signs
and exponents, exact in fp16), which compress about fivefold and exercise every tap as any random
weights do. The repository keeps RefineGAN at 24 kHz (the rate only RefineGAN trains at);
`--every-rate` writes 32, 40 and 48 kHz too (into another folder: checked, not kept).
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from rvc.lib.algorithm.synthesizers import Synthesizer

# Applio's rvc/configs/<rate>.json: upsample rates and kernels per sample rate.
RATES = {
    24000: ([10, 6, 2, 2], [20, 12, 4, 4]),
    32000: ([10, 8, 2, 2], [20, 16, 4, 4]),
    40000: ([10, 10, 2, 2], [16, 16, 4, 4]),
    48000: ([12, 10, 2, 2], [24, 20, 4, 4]),
}
# Applio trains v2 voices, and plays v1 ones (256-d features: text_enc_hidden_dim 256). The v1
# cases let the app's tests convert with them through the tiny HuBERT of ../shared/fixtures, whose
# 256-d final_proj features only v1 voices take; the decoders do not depend on the version.
CASES = [
    ("mrf_hifigan_32k", "MRF HiFi-GAN", 32000, "v1"),
    ("mrf_hifigan_40k", "MRF HiFi-GAN", 40000, "v2"),
    ("mrf_hifigan_48k", "MRF HiFi-GAN", 48000, "v1"),
    ("refinegan_24k", "RefineGAN", 24000, "v1"),
    # Applio's HiFi-GAN voice, as Applio writes it: what our trained exports are held to, key for key.
    ("hifigan_40k", "HiFi-GAN", 40000, "v2"),
]
EVERY_RATE = [
    ("refinegan_32k", "RefineGAN", 32000, "v2"),
    ("refinegan_40k", "RefineGAN", 40000, "v2"),
    ("refinegan_48k", "RefineGAN", 48000, "v2"),
]
FEATURES = {"v1": 256, "v2": 768}
FRAMES = 48


def config(vocoder, sr):
    rates, kernels = RATES[sr]
    refinegan = vocoder == "RefineGAN"
    return [
        513,  # spec_channels (filter_length // 2 + 1)
        32,  # segment_size
        16,  # inter_channels
        16,  # hidden_channels
        32,  # filter_channels
        2,  # n_heads
        2,  # n_layers
        3,  # kernel_size
        0,  # p_dropout
        "1",
        [3, 7, 11],
        [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
        rates,
        512 if refinegan else 32,  # upsample_initial_channel (RefineGAN's is always 512)
        kernels,
        3,  # spk_embed_dim
        256 if refinegan else 16,  # gin_channels
        sr,
    ]


def build(cfg, vocoder, version):
    features = FEATURES[version]
    return Synthesizer(*cfg, use_f0=True, text_enc_hidden_dim=features, vocoder=vocoder)


def randomise(net_g, generator, powers_of_two):
    """Default init leaves weight norm's magnitudes equal to the directions' norms and AdaIN's
    weights constant; every parameter gets its own random scale so no layer is an identity."""
    with torch.no_grad():
        for name, p in net_g.named_parameters():
            if name.endswith("original0"):
                p.mul_(0.5 + torch.rand(p.shape, generator=generator))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=generator))
            elif p.dim() >= 1:
                p.add_(0.1 * (p.std() if p.numel() > 1 else p.abs()).clamp(min=0.01) * torch.randn(p.shape, generator=generator))
            if powers_of_two and name.startswith("dec."):
                # Weight norm's magnitudes of 1 and 2 keep the signal from fading layer by layer.
                magnitude = name.endswith("original0")
                scale = 2.0 if magnitude else 2.0 ** torch.round(torch.log2(p.abs().mean()))
                exponent = torch.randint(0, 2 if magnitude else 4, p.shape, generator=generator)
                sign = torch.randint(0, 2, p.shape, generator=generator) * 2 - 1
                p.copy_(sign * scale * 2.0 ** -exponent.float())


def rename(d):
    """What extract_model writes: torch's new weight-norm names as the old ones."""
    return {
        k.replace(".parametrizations.weight.original1", ".weight_v").replace(
            ".parametrizations.weight.original0", ".weight_g"
        ): v
        for k, v in d.items()
    }


def coarse(f0):
    mel_min, mel_max = 1127 * np.log(1 + 50 / 700), 1127 * np.log(1 + 1100 / 700)
    mel = 1127 * np.log(1 + f0 / 700)
    mel[mel > 0] = (mel[mel > 0] - mel_min) * 254 / (mel_max - mel_min) + 1
    return np.rint(np.clip(mel, 1, 255)).astype(np.int64)


def inputs(generator, version):
    phone = torch.randn(1, FRAMES, FEATURES[version], generator=generator)
    f0 = np.linspace(110.0, 290.0, FRAMES) * (1 + 0.03 * np.sin(np.arange(FRAMES) / 3))
    f0[20:27] = 0.0  # an unvoiced stretch the sines must stop and restart at
    pitchf = torch.from_numpy(f0).float()[None]
    pitch = torch.from_numpy(coarse(f0))[None]
    return phone, torch.tensor([FRAMES]), pitch, pitchf, torch.tensor([1])


def run_without_noise(net_g, phone, lengths, pitch, pitchf, sid):
    randn_like, rand = torch.randn_like, torch.rand
    torch.randn_like = lambda x, *a, **k: torch.zeros_like(x)
    torch.rand = lambda *shape, **k: torch.zeros(*shape, **k)
    try:
        with torch.no_grad():
            return net_g.infer(phone, lengths, pitch, pitchf, sid)[0]
    finally:
        torch.randn_like, torch.rand = randn_like, rand


def make(out, name, vocoder, sr, version, seed):
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    cfg = config(vocoder, sr)
    net_g = build(cfg, vocoder, version)
    randomise(net_g, generator, powers_of_two=vocoder == "RefineGAN")
    weights = {
        k: v.half() for k, v in rename(net_g.state_dict()).items() if "enc_q" not in k
    }
    cpt = {
        "weight": weights,
        "config": cfg,
        "epoch": 7,
        "step": 700,
        "sr": f"{sr // 1000}k",
        "f0": True,
        "version": version,
        "creation_date": "2026-12-03T00:00:00",
        "model_hash": f"{seed:064x}",
        "dataset_length": None,
        "model_name": name,
        "author": "timbre fixtures",
        "embedder_model": "contentvec",
        "speakers_id": 1,
        "vocoder": vocoder,
    }
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(cpt, folder / "model.pth")

    # Loaded back as Applio's infer.py does, in float32.
    cpt = torch.load(folder / "model.pth", map_location="cpu", weights_only=False)
    net_g = build(cpt["config"], cpt["vocoder"], cpt["version"])
    missing, unexpected = net_g.load_state_dict(
        {k: v.float() for k, v in cpt["weight"].items()}, strict=False
    )
    assert not unexpected and all("enc_q" in k for k in missing), (missing, unexpected)
    net_g.eval()
    phone, lengths, pitch, pitchf, sid = inputs(generator, version)
    audio = run_without_noise(net_g, phone, lengths, pitch, pitchf, sid)
    rms = audio.pow(2).mean().sqrt().item()
    print(f"{name}: audio {list(audio.shape)}, rms {rms:.4f}")
    assert audio.shape[-1] == FRAMES * int(np.prod(cfg[12])) and 0.01 < rms < 0.9
    save_file(
        {
            "phone": phone.contiguous(),
            "phone_lengths": lengths,
            "pitch": pitch,
            "pitchf": pitchf,
            "sid": sid,
            "audio": audio.contiguous(),
        },
        folder / "io.safetensors",
    )
    return {
        "name": name,
        "kind": "synthesizer",
        "model": f"{name}/model.pth",
        "io": f"{name}/io.safetensors",
        "version": version,
        "f0": 1,
        "sr": sr,
        "vocoder": vocoder,
        "weights_dtype": "float16",
        "note": "Applio's net_g.infer(phone, phone_lengths, pitch, nsff0, sid) with every random "
        "draw zero (z_p = m_p; the sine generator's initial phase and noise 0; RefineGAN's AdaIN "
        "noise 0); computed in float32; audio is [1, 1, frames*hop]",
        "tolerance": {"max_abs": 0.002, "snr_db_min": 40.0},
    }


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    every_rate = "--every-rate" in sys.argv
    out = Path(args[0]) if args else Path(__file__).parent
    cases = [
        make(out, name, vocoder, sr, version, seed)
        for seed, (name, vocoder, sr, version) in enumerate(
            CASES + (EVERY_RATE if every_rate else []), start=11
        )
    ]
    manifest = {"set": "applio", "applio": "IAHispano/Applio b9c0ccb", "cases": cases}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
