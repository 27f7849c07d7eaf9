"""Writes the inputs of the conversion benchmark (`make bench`) into one folder, seeded:

- `models/voice_a.pth`, `models/voice_b.pth`: full-size RVC v2 40k pitch models with random
  weights, built with rvc-next's synthesizer class and saved as RVC saves inference models
  (fp16 `weight` without `enc_q`, the 18-item `config`, `info`, `sr`, `f0`, `version`);
- `models/rmvpe.pt`: an RMVPE `E2E(4, 1, (2, 2))` state dict (the real model's architecture),
  fp16 as the published `rmvpe.pt` is;
- `models/contentvec/`: a HuBERT base (768 hidden, 12 layers, `final_proj` to 256) as a
  transformers folder, which is how rvc-next loads it;
- `assets/`: the same HuBERT and RMVPE in rvc-next's asset layout (symbolic links);
- `input.wav`: 60 s of a voice-like signal at 16 kHz (band-limited sawtooth with vibrato,
  phrases and pauses).

Random weights cost the same to run as trained ones; nothing here sounds like a voice.
Run in .venv-bench: `python bench/make_models.py OUT_DIR`.
"""

import argparse
import json
import os
import wave
from pathlib import Path

import numpy as np
import torch
from rvc_next.engine.f0.rmvpe import E2E
from rvc_next.engine.features.hubert import _model_class
from rvc_next.engine.models.checkpoint import save_small_from_state
from rvc_next.engine.models.extract import config_for
from rvc_next.engine.models.synthesizer import SynthesizerTrnMs768NSFsid
from transformers import HubertConfig
from transformers.utils import logging as hf_logging

SAMPLE_RATE = 16_000


def write_voice(path: Path, seed: int) -> None:
    torch.manual_seed(seed)
    config = config_for("40k", "v2")
    net_g = SynthesizerTrnMs768NSFsid(*config, is_half=False)
    save_small_from_state(
        net_g.state_dict(),
        config,
        path,
        sr="40k",
        pitch_guidance=True,
        version="v2",
        info=f"random weights, seed {seed} (Timbre Studio benchmark)",
    )


def write_rmvpe(path: Path, seed: int) -> None:
    torch.manual_seed(seed)
    state = E2E(4, 1, (2, 2)).state_dict()
    torch.save({k: v.half() if v.is_floating_point() else v for k, v in state.items()}, path)


def write_hubert(folder: Path, seed: int) -> None:
    torch.manual_seed(seed)
    config = HubertConfig(classifier_proj_size=256)  # the defaults are HuBERT base
    model = _model_class()(config).eval()
    model.save_pretrained(folder, safe_serialization=True)
    preprocessor = {"do_normalize": False, "feature_size": 1, "sampling_rate": SAMPLE_RATE, "padding_value": 0.0}
    (folder / "preprocessor_config.json").write_text(json.dumps(preprocessor, indent=2))


def voice_like(seconds: float, seed: int, rate: int = SAMPLE_RATE) -> np.ndarray:
    """Phrases of 1.5–4 s separated by 0.2–0.8 s pauses; each a sawtooth (harmonics up to 7 kHz,
    falling as 1/k) whose pitch glides between 110 and 260 Hz with 5.5 Hz vibrato."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    out = np.zeros(n)
    t = 0
    while t < n:
        length = min(int(rng.uniform(1.5, 4.0) * rate), n - t)
        time = np.arange(length) / rate
        base = np.geomspace(rng.uniform(110, 260), rng.uniform(110, 260), length)
        f0 = base * 2 ** (0.4 / 12 * np.sin(2 * np.pi * 5.5 * time))
        phase = 2 * np.pi * np.cumsum(f0) / rate
        saw = sum(np.sin(k * phase) / k * (k * f0 < 7_000) for k in range(1, int(7_000 / 110) + 1))
        envelope = np.minimum(1, np.minimum(time, time[::-1]) / 0.05)
        out[t : t + length] = 0.25 * saw * envelope
        t += length + int(rng.uniform(0.2, 0.8) * rate)
    out += 0.003 * rng.standard_normal(n)
    return out


def write_wav(path: Path, samples: np.ndarray, rate: int = SAMPLE_RATE) -> None:
    """16-bit PCM; `samples` is `[frames]` or `[frames, channels]`."""
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1 if samples.ndim == 1 else samples.shape[1])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def link(target: Path, link_path: Path) -> None:
    link_path.parent.mkdir(parents=True, exist_ok=True)
    if link_path.is_symlink() or link_path.exists():
        link_path.unlink()
    link_path.symlink_to(os.path.relpath(target, link_path.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    hf_logging.disable_progress_bar()
    models = args.out / "models"
    (models / "contentvec").mkdir(parents=True, exist_ok=True)
    write_voice(models / "voice_a.pth", seed=1)
    write_voice(models / "voice_b.pth", seed=2)
    write_rmvpe(models / "rmvpe.pt", seed=3)
    write_hubert(models / "contentvec", seed=4)
    link(models / "contentvec", args.out / "assets" / "hubert_base")
    link(models / "rmvpe.pt", args.out / "assets" / "rmvpe" / "rmvpe.pt")
    write_wav(args.out / "input.wav", voice_like(args.seconds, seed=5))


if __name__ == "__main__":
    main()
