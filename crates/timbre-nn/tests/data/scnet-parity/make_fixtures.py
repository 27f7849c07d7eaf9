"""Random-weight SCNet separators and what MSST's own code gives for them: the `scnet-parity`
fixture set beside this script (manifest.json, one folder per case), in the format of
../shared/fixtures/separation (`kind: scnet`).

    PYTHONPATH=<MSST checkout>:<ml_collections, installed with --target> \
        .venv/bin/python crates/timbre-nn/tests/data/scnet-parity/make_fixtures.py [OUT]

MSST is ZFTurbo/Music-Source-Separation-Training at ccc011a (`models/scnet/scnet.py`, `SCNet`,
and `models/scnet/separation.py`; `utils/model_utils.py`, `demix`); ml_collections only for its
`ConfigDict`. Each model is built by MSST from the case's YAML as `get_model_from_config('scnet',
…)` builds it (`SCNet(**config.model)`), given random weights (GroupNorm gains and every bias
too, so no layer is an identity), saved as a state dict, loaded back as inference.py loads it
(`load_start_checkpoint`, `model.eval()`) and run in float32 on the CPU:

- `chunk_output`: `model(mix[:, :chunk_size][None])`, `[1, stems, channels, chunk_size]`, where
  `chunk_size` is `inference.chunk_size` when the config has one, else `audio.chunk_size`;
- `demix`: `demix(config, model, mix, 'cpu', model_type='scnet')` (generic mode), the stems
  stacked in the order of `prefer_target_instrument`, `[stems, channels, samples]`.

The cases cover what `SCNet.__init__` takes: two and three SD blocks (`dims`), the band splits
of the SCNet and SCNet-large configs and others (`band_SR`, `band_stride`, `band_kernel`, a
stride-1 kernel other than 3 so the SU layers trim), `conv_depths` with a zero and a negative
depth, `compress`, `conv_kernel`, `num_dplayer`, `expand`, `normalized` on and off, a window
shorter than the FFT (`win_size`), stereo and mono (`audio_channels`), one, two and four stems,
a target instrument, `inference.chunk_size` overriding `audio.chunk_size`, chunks that are not a
multiple of the hop, and a checkpoint saved as MSST's training saves one (`model_state_dict`).
Sizes are tiny: FFTs of 256 or 128, a few channels; the mix is a few chunks long.
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import yaml
from ml_collections import ConfigDict
from safetensors.torch import save_file

from models.scnet import SCNet
from utils.model_utils import demix, load_start_checkpoint, prefer_target_instrument

RATE = 44100


def model(sources, channels, dims, nfft, hop, win, normalized, sr, stride, kernel, depths,
          compress, conv_kernel, dplayers, expand):
    return {
        "sources": sources,
        "audio_channels": channels,
        "dims": dims,
        "nfft": nfft,
        "hop_size": hop,
        "win_size": win,
        "normalized": normalized,
        "band_SR": sr,
        "band_stride": stride,
        "band_kernel": kernel,
        "conv_depths": depths,
        "compress": compress,
        "conv_kernel": conv_kernel,
        "num_dplayer": dplayers,
        "expand": expand,
    }


def audio(chunk_size, channels):
    return {"chunk_size": chunk_size, "num_channels": channels, "sample_rate": RATE,
            "min_mean_abs": 0.0}


# (name, config, mix length in samples, checkpoint as MSST's training saves it)
CASES = [
    (
        "vocals_other_stereo",
        {
            "audio": audio(2000, 2),
            "model": model(["vocals", "other"], 2, [4, 8, 12], 256, 64, 256, True,
                           [0.175, 0.392, 0.433], [1, 4, 16], [3, 4, 16], [3, 2, 1], 4, 3, 2, 1),
            "training": {"instruments": ["vocals", "other"], "target_instrument": None,
                         "use_amp": False},
            "inference": {"batch_size": 2, "dim_t": 256, "num_overlap": 4, "normalize": False},
        },
        4 * 2000 + 517,
        False,
    ),
    (
        "large_four_stems",
        {
            "audio": audio(2304, 2),
            "model": model(["drums", "bass", "other", "vocals"], 2, [4, 6, 8, 8], 256, 64, 192,
                           False, [0.225, 0.372, 0.403], [1, 4, 8], [5, 4, 8], [1, 2, 1], 2, 5,
                           2, 2),
            "training": {"instruments": ["drums", "bass", "other", "vocals"],
                         "target_instrument": None, "use_amp": False},
            "inference": {"batch_size": 1, "dim_t": 256, "num_overlap": 2, "normalize": False},
        },
        2 * 2304 + 1000,
        True,
    ),
    (
        "mono_target_vocals",
        {
            "audio": audio(3000, 1),
            "model": model(["vocals"], 1, [2, 8, 8], 128, 32, 128, True,
                           [0.3, 0.3, 0.4], [1, 2, 4], [3, 2, 4], [2, -1, 0], 2.5, 3, 2, 1),
            "training": {"instruments": ["vocals", "other"], "target_instrument": "vocals",
                         "use_amp": False},
            "inference": {"batch_size": 3, "chunk_size": 1500, "dim_t": 256, "num_overlap": 3},
        },
        5 * 1500 + 200,
        False,
    ),
]


def randomise(net, generator):
    """Default init leaves GroupNorm gains at one and their biases at zero."""
    with torch.no_grad():
        for name, p in net.state_dict().items():
            if name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            elif p.dim() == 1:
                p.copy_(0.8 + 0.4 * torch.rand(p.shape, generator=generator))


def mix_of(length, channels, generator):
    t = torch.arange(length, dtype=torch.float64) / RATE
    tones = [(196.0, 0.2), (293.7, 0.12), (440.0, 0.08), (1318.5, 0.04), (5274.0, 0.02)]
    left = sum(a * torch.sin(2 * np.pi * f * t) for f, a in tones)
    right = sum(a * torch.sin(2 * np.pi * f * 1.01 * t + 0.5) for f, a in tones)
    noise = 0.03 * torch.randn(2, length, generator=generator, dtype=torch.float64)
    return (torch.stack([left, right]) + noise)[:channels].float()


def make(out, name, cfg, length, training_checkpoint, seed):
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    # As utils/settings.py load_config reads it.
    with open(folder / "config.yaml") as f:
        config = ConfigDict(yaml.load(f, Loader=yaml.FullLoader))

    net = SCNet(**config.model)
    randomise(net, generator)
    state = net.state_dict()
    saved = {"epoch": 3, "best_metric": 1.5, "model_state_dict": state} if training_checkpoint else state
    torch.save(saved, folder / "model.ckpt")

    # As inference.py loads it.
    net = SCNet(**config.model)
    checkpoint = torch.load(folder / "model.ckpt", weights_only=False, map_location="cpu")
    load_start_checkpoint(ConfigDict({"start_check_point": str(folder / "model.ckpt"),
                                      "model_type": "scnet", "lora_checkpoint_loralib": ""}),
                          net, checkpoint, type_="inference")
    net.eval()

    channels = config.model.audio_channels
    mix = mix_of(length, channels, generator)
    chunk_size = config.inference.get("chunk_size", config.audio.chunk_size)
    with torch.inference_mode():
        chunk_output = net(mix[:, :chunk_size][None])
    separated = demix(config, net, mix.numpy(), "cpu", model_type="scnet")
    stems = prefer_target_instrument(config)
    demixed = torch.from_numpy(np.stack([separated[s] for s in stems]))
    rms = demixed.pow(2).mean().sqrt().item()
    print(f"{name}: chunk_output {list(chunk_output.shape)}, demix {list(demixed.shape)}, rms {rms:.4f}")
    assert chunk_output.shape == (1, len(stems), channels, chunk_size), chunk_output.shape
    assert demixed.shape == (len(stems), channels, length) and 0.001 < rms < 100, rms
    save_file(
        {"mix": mix.contiguous(), "chunk_output": chunk_output.contiguous(),
         "demix": demixed.float().contiguous()},
        folder / "io.safetensors",
    )
    return {
        "name": name,
        "kind": "scnet",
        "model": f"{name}/model.ckpt",
        "config": f"{name}/config.yaml",
        "io": f"{name}/io.safetensors",
        "stems": stems,
        "sample_rate": RATE,
        "note": "chunk_output = model(mix[:, :chunk_size][None]), chunk_size = inference.chunk_size "
        "if the config has one, else audio.chunk_size; demix = MSST's demix(config, model, mix, "
        "model_type='scnet') (generic mode, as for the RoFormers and MDX23C), stems stacked in "
        "prefer_target_instrument order; float32 on the CPU",
        "tolerance": {"snr_db_min": 40.0},
    }


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    cases = [
        make(out, name, cfg, length, training_checkpoint, seed)
        for seed, (name, cfg, length, training_checkpoint) in enumerate(CASES, start=41)
    ]
    manifest = {"set": "scnet", "msst": "ZFTurbo/Music-Source-Separation-Training ccc011a",
                "cases": cases}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
