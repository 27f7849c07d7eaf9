"""A random-weight energy-conditioned voice and what Vietnamese-RVC's own code gives for it: the
`energy-parity` fixture set beside this script (manifest.json, the voice's folder, energy.safetensors).

    .venv/bin/python crates/timbre-nn/tests/data/energy-parity/make_fixtures.py [VRVC] [OUT]

VRVC is a checkout of PhamHuynhAnh16/Vietnamese-RVC's `main` folder at 395f6a7 (default /tmp/vrvc):
`git archive 395f6a7 main | tar -x -C /tmp/vrvc`. That is the fork's last commit whose energy path
runs: from c46a438 its `RMSEnergyExtractor` reflect-pads a 1-D tensor with `F.pad`, which torch
refuses, and e39cf4c removed energy altogether; from bf78e6f to 395f6a7 it is librosa's
`feature.rms`, which trained every energy voice there is.

The fork's UI modules (`main.app.variables`, which imports gradio and writes its config, and
`main.library.utils`, which loads embedders) are stood in for by the few names the synthesizer, the
RMS extractor and the conversion pipeline import from them; the stand-ins that the paths below
never call raise if called.

1. `energy_v1_40k/`: a v1 HiFi-GAN NSF voice at 40 kHz with `emb_energy`, built by the fork's
   `Synthesizer(*config, use_f0=True, vocoder="Default", energy=True)` at tiny sizes, saved as its
   `extract_model` saves one (fp16 weights without enc_q, weight_g/weight_v names, its entries:
   `vocoder: "Default"`, `energy: True`, no `embedder_model`), loaded back as its `convert.py`
   loads it and run with `net_g.infer(phone, lengths, pitch, pitchf, sid, energy)` in float32
   with every random draw zero. The energy fed is a stretch of the curve of step 2.
2. `energy.safetensors`: a 1.5 s input and the energy curve the fork's `Pipeline.pipeline`
   (energy_use=True) hands each segment's `voice_conversion`: `RMSEnergyExtractor(2048, 160,
   center, reflect)` over the 48 Hz high-passed input reflect-padded by x_pad seconds, cut to
   `p_len`. The pipeline runs for real with `voice_conversion` replaced by a recorder (the
   features and synthesis are not what is measured), without pitch or index.
"""

import json
import sys
import types
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

VRVC = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/vrvc")
OUT = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent
COMMIT = "395f6a7"
# Our chunking defaults: the fork's own for half precision (x_pad, x_query, x_center, x_max).
CHUNKING = (3, 10, 60, 65)
FRAMES = 48


def never(name):
    def call(*args, **kwargs):
        raise RuntimeError(f"the stand-in for {name} was called")

    return call


def stand_in_ui_modules():
    class Translations(dict):
        def __missing__(self, key):
            return key + " {name}"

    variables = types.ModuleType("main.app.variables")
    variables.logger = __import__("logging").getLogger("vrvc")
    variables.translations = Translations()
    variables.configs = {}
    variables.config = None
    utils = types.ModuleType("main.library.utils")
    for name in ["load_audio", "extract_features", "change_rms", "load_faiss_index"]:
        setattr(utils, name, never(name))
    utils.clear_gpu_cache = lambda: None
    sys.modules["main.app.variables"] = variables
    sys.modules["main.library.utils"] = utils


sys.path.insert(0, str(VRVC))
stand_in_ui_modules()
from main.library.algorithm.synthesizers import Synthesizer  # noqa: E402
from main.inference.conversion.pipeline import Pipeline  # noqa: E402


def config():
    return [
        513,  # spec_channels
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
        [10, 10, 2, 2],  # the fork's 40k upsample rates
        32,  # upsample_initial_channel
        [16, 16, 4, 4],
        3,  # spk_embed_dim
        16,  # gin_channels
        40000,
    ]


def build(cfg, energy):
    # As convert.py builds a loaded voice: text_enc_hidden_dim from the version, energy from its entry.
    return Synthesizer(*cfg, use_f0=True, text_enc_hidden_dim=256, vocoder="Default", energy=energy)


def randomise(net_g, generator):
    """Default init leaves weight norm's magnitudes equal to the directions' norms; every
    parameter gets its own random scale so no layer is an identity. The energy embedding gets
    weights large enough that energy moves the output well past the parity floor."""
    with torch.no_grad():
        for name, p in net_g.named_parameters():
            if name == "enc_p.emb_energy.weight":
                p.copy_(8.0 * torch.randn(p.shape, generator=generator))
            elif name.endswith("original0"):
                p.mul_(0.5 + torch.rand(p.shape, generator=generator))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=generator))
            elif p.dim() >= 1:
                p.add_(0.1 * (p.std() if p.numel() > 1 else p.abs()).clamp(min=0.01) * torch.randn(p.shape, generator=generator))
            if name.startswith("dec.ups.") and name.endswith("original0"):
                # The fork initialises the upsamplers at N(0, 0.01), which would leave the prior's
                # path (and so the energy's) drowned by the pitch excitation's.
                p.mul_(3.0)


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


def infer_without_noise(net_g, *inputs):
    randn_like, rand = torch.randn_like, torch.rand
    torch.randn_like = lambda x, *a, **k: torch.zeros_like(x)
    torch.rand = lambda *shape, **k: torch.zeros(*shape, **k)
    try:
        with torch.no_grad():
            return net_g.infer(*inputs)[0]
    finally:
        torch.randn_like, torch.rand = randn_like, rand


def test_input():
    """1.5 s of a gliding tone whose loudness swells and fades, with a silent gap and some noise."""
    rate = 16000
    t = np.arange(int(1.5 * rate)) / rate
    phase = 2 * np.pi * np.cumsum(180 + 60 * np.sin(2 * np.pi * 0.8 * t)) / rate
    loudness = 0.05 + 0.45 * np.sin(np.pi * t / 1.5) ** 2
    audio = loudness * (np.sin(phase) + 0.3 * np.sin(2 * phase))
    audio[int(0.6 * rate) : int(0.75 * rate)] = 0.0
    audio += 0.003 * np.random.default_rng(7).standard_normal(t.shape)
    return audio.astype(np.float32)


class Recorder:
    def __init__(self, tgt_sr):
        self.tgt_sr = tgt_sr
        self.calls = []

    def __call__(self, model, net_g, sid, audio0, pitch, pitchf, index, big_npy, index_rate, version, protect, energy, **kwargs):
        self.calls.append((audio0.shape[0], energy.clone()))
        return np.zeros(audio0.shape[0] // 160 * (self.tgt_sr // 100), dtype=np.float32)


def fork_energy(audio):
    x_pad, x_query, x_center, x_max = CHUNKING
    cfg = types.SimpleNamespace(x_pad=x_pad, x_query=x_query, x_center=x_center, x_max=x_max, device="cpu", is_half=False)
    pipeline = Pipeline(40000, cfg)
    recorder = Recorder(40000)
    pipeline.voice_conversion = recorder
    pipeline.pipeline(
        logger=None, model=None, net_g=None, sid=0, audio=audio, f0_up_key=0, f0_method="rmvpe",
        file_index="", index_rate=0, pitch_guidance=False, filter_radius=3, rms_mix_rate=1,
        version="v1", protect=0.5, hop_length=160, f0_autotune=False, f0_autotune_strength=1,
        energy_use=True,
    )
    assert len(recorder.calls) == 1, "a 1.5 s input is one segment"
    samples, energy = recorder.calls[0]
    assert samples == audio.shape[0] + 2 * 16000 * x_pad and energy.dim() == 1
    assert energy.shape[0] == samples // 160, energy.shape
    return energy.float()


def make_voice(energy_curve):
    name = "energy_v1_40k"
    generator = torch.Generator().manual_seed(31)
    torch.manual_seed(31)
    cfg = config()
    net_g = build(cfg, energy=True)
    randomise(net_g, generator)
    cpt = {
        "weight": {k: v.half() for k, v in rename(net_g.state_dict()).items() if "enc_q" not in k},
        "config": cfg,
        "epoch": "7epoch",
        "step": 700,
        "sr": "40k",
        "f0": 1,
        "version": "v1",
        "creation_date": "2026-05-05T00:00:00",
        "model_hash": f"{31:064x}",
        "model_name": name,
        "author": "timbre fixtures",
        "vocoder": "Default",
        "energy": True,
        "speakers_id": 1,
        "architecture": "RVC",
    }
    folder = OUT / name
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(cpt, folder / "model.pth")

    # Loaded back as convert.py does: energy from the entry, strict=False, float32.
    cpt = torch.load(folder / "model.pth", map_location="cpu", weights_only=False)
    net_g = build(cpt["config"], energy=cpt.get("energy", False))
    missing, unexpected = net_g.load_state_dict({k: v.float() for k, v in cpt["weight"].items()}, strict=False)
    assert not unexpected and all("enc_q" in k for k in missing), (missing, unexpected)
    net_g.eval()

    phone = torch.randn(1, FRAMES, 256, generator=generator)
    f0 = np.linspace(110.0, 290.0, FRAMES) * (1 + 0.03 * np.sin(np.arange(FRAMES) / 3))
    f0[20:27] = 0.0
    pitchf = torch.from_numpy(f0).float()[None]
    pitch = torch.from_numpy(coarse(f0))[None]
    lengths, sid = torch.tensor([FRAMES]), torch.tensor([1])
    # A stretch of the input's curve across its swell, as a segment's voice_conversion feeds it.
    start = 16000 * CHUNKING[0] // 160 + 20
    energy = energy_curve[start : start + FRAMES][None].contiguous()
    audio = infer_without_noise(net_g, phone, lengths, pitch, pitchf, sid, energy)
    silent = infer_without_noise(net_g, phone, lengths, pitch, pitchf, sid, torch.zeros_like(energy))
    rms = audio.pow(2).mean().sqrt().item()
    snr_without = 10 * np.log10(audio.pow(2).sum().item() / (audio - silent).pow(2).sum().item())
    print(f"{name}: audio {list(audio.shape)}, rms {rms:.4f}, energy {energy.min():.3f}..{energy.max():.3f}, "
          f"output without energy at {snr_without:.1f} dB SNR")
    assert audio.shape[-1] == FRAMES * 400 and 0.01 < rms < 0.9
    assert snr_without < 20, "energy must move the output well past the 40 dB floor"
    save_file(
        {
            "phone": phone.contiguous(),
            "phone_lengths": lengths,
            "pitch": pitch,
            "pitchf": pitchf,
            "energy": energy,
            "sid": sid,
            "audio": audio.contiguous(),
        },
        folder / "io.safetensors",
    )
    return {
        "name": name,
        "kind": "synthesizer_energy",
        "model": f"{name}/model.pth",
        "io": f"{name}/io.safetensors",
        "version": "v1",
        "f0": 1,
        "sr": 40000,
        "vocoder": "HiFi-GAN",
        "weights_dtype": "float16",
        "note": "Vietnamese-RVC's net_g.infer(phone, phone_lengths, pitch, nsff0, sid, energy) with every "
        "random draw zero; computed in float32; energy [1, frames]; audio is [1, 1, frames*hop]",
        "tolerance": {"snr_db_min": 40.0},
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    audio = test_input()
    energy = fork_energy(audio)
    print(f"energy curve: {energy.shape[0]} frames, {energy.min():.4f}..{energy.max():.4f}")
    save_file(
        {"audio_16k": torch.from_numpy(audio), "energy": energy.contiguous()},
        OUT / "energy.safetensors",
    )
    cases = [
        make_voice(energy),
        {
            "name": "energy_curve",
            "kind": "energy_curve",
            "io": "energy.safetensors",
            "chunking": dict(zip(["x_pad", "x_query", "x_center", "x_max"], map(float, CHUNKING))),
            "note": "the energy Pipeline.pipeline hands voice_conversion for audio_16k: "
            "RMSEnergyExtractor(2048, 160, center, reflect) of the high-passed, x_pad-padded input, [:p_len]",
            "tolerance": {"max_abs": 1e-6},
        },
    ]
    manifest = {
        "set": "energy",
        "vietnamese_rvc": f"PhamHuynhAnh16/Vietnamese-RVC {COMMIT}",
        "cases": cases,
    }
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
