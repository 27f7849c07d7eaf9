"""Random-weight MDX23C separators and what MSST's own code gives for them: the `mdx23c-parity`
fixture set beside this script (manifest.json, one folder per case), in the format of
../shared/fixtures/separation (`kind: mdx23c`).

    PYTHONPATH=<MSST checkout>:<ml_collections, installed with --target> \
        .venv/bin/python crates/timbre-nn/tests/data/mdx23c-parity/make_fixtures.py [OUT]

MSST is ZFTurbo/Music-Source-Separation-Training at ccc011a (`models/mdx23c_tfc_tdf_v3.py`,
`TFC_TDF_net`; `utils/model_utils.py`, `demix`); ml_collections only for its `ConfigDict`. Each
model is built by MSST from the case's YAML as `get_model_from_config('mdx23c', …)` builds it,
given random weights (norm gains, biases and BatchNorm running statistics too, so no layer is an
identity), saved as a state dict, loaded back as inference.py loads it (`load_start_checkpoint`,
`model.eval()`) and run in float32 on the CPU:

- `chunk_output`: `model(mix[:, :chunk_size][None])`, `[1, stems, 2, chunk_size]`, where
  `chunk_size` is `inference.chunk_size` when the config has one, else `audio.chunk_size`;
- `demix`: `demix(config, model, mix, 'cpu', model_type='mdx23c')`, the stems stacked in the
  order of `prefer_target_instrument`, `[stems, 2, samples]`.

The cases cover every norm and activation family MSST's `get_norm` / `get_act` build (BatchNorm,
InstanceNorm, GroupNorm<g>, anything else as Identity; gelu, relu, elu<alpha>), one stem and
several, square and non-square `scale`, `inference.chunk_size` overriding `audio.chunk_size`,
and a checkpoint saved as MSST's training saves one (`model_state_dict`). Sizes are tiny: a few
channels, 2 scales, chunks of about 2000 samples; the mix is a few chunks long.
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import yaml
from ml_collections import ConfigDict
from safetensors.torch import save_file

from models.mdx23c_tfc_tdf_v3 import TFC_TDF_net
from utils.model_utils import demix, load_start_checkpoint, prefer_target_instrument

RATE = 44100


def audio(n_fft, hop, dim_t, dim_f):
    return {
        "chunk_size": hop * (dim_t - 1),
        "dim_f": dim_f,
        "dim_t": dim_t,
        "hop_length": hop,
        "n_fft": n_fft,
        "num_channels": 2,
        "sample_rate": RATE,
        "min_mean_abs": 0.001,
    }


def model(norm, act, channels, growth, blocks, bottleneck, subbands, scale):
    return {
        "act": act,
        "bottleneck_factor": bottleneck,
        "growth": growth,
        "norm": norm,
        "num_blocks_per_scale": blocks,
        "num_channels": channels,
        "num_scales": 2,
        "num_subbands": subbands,
        "scale": scale,
    }


# (name, config, mix length in samples, checkpoint as MSST's training saves it)
CASES = [
    (
        "batchnorm_gelu_vocals",
        {
            "audio": audio(256, 64, 32, 128),
            "model": model("BatchNorm", "gelu", 8, 4, 1, 2, 2, [2, 2]),
            "training": {
                "instruments": ["vocals", "other"],
                "target_instrument": "vocals",
                "use_amp": False,
            },
            "inference": {"batch_size": 2, "dim_t": 32, "num_overlap": 4},
        },
        6 * 1984 + 517,
        False,
    ),
    (
        "instancenorm_relu_four_stems",
        {
            "audio": audio(512, 128, 16, 256),
            "model": model("InstanceNorm", "relu", 8, 4, 2, 4, 4, [2, 2]),
            "training": {
                "instruments": ["vocals", "bass", "drums", "other"],
                "target_instrument": None,
                "use_amp": False,
            },
            "inference": {"batch_size": 1, "chunk_size": 3968, "dim_t": 32, "num_overlap": 2},
        },
        2 * 3968 + 1000,
        True,
    ),
    (
        "groupnorm_elu_two_stems",
        {
            "audio": audio(256, 64, 32, 128),
            "model": model("GroupNorm4", "elu0.5", 8, 4, 1, 2, 2, [2, 4]),
            "training": {
                "instruments": ["vocals", "other"],
                "target_instrument": None,
                "use_amp": False,
            },
            "inference": {"batch_size": 3, "dim_t": 32, "num_overlap": 4},
        },
        5 * 1984 + 1200,
        False,
    ),
    (
        "identity_gelu_vocals",
        {
            "audio": audio(256, 64, 32, 96),
            "model": model("none", "gelu", 4, 4, 1, 2, 3, [2, 2]),
            "training": {
                "instruments": ["vocals", "instrumental"],
                "target_instrument": "vocals",
                "use_amp": False,
            },
            "inference": {"batch_size": 1, "dim_t": 32, "num_overlap": 3},
        },
        4 * 1984 + 300,
        False,
    ),
]


def randomise(net, generator):
    """Default init leaves norm gains at one and biases and running statistics at zero."""
    with torch.no_grad():
        for name, p in net.state_dict().items():
            if name.endswith("num_batches_tracked"):
                p.fill_(7)
            elif name.endswith("running_var"):
                p.copy_(0.5 + torch.rand(p.shape, generator=generator))
            elif name.endswith("running_mean") or name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            elif p.dim() == 1:
                p.copy_(0.8 + 0.4 * torch.rand(p.shape, generator=generator))


def mix_of(length, generator):
    t = torch.arange(length, dtype=torch.float64) / RATE
    tones = [(196.0, 0.2), (293.7, 0.12), (440.0, 0.08), (1318.5, 0.04), (5274.0, 0.02)]
    left = sum(a * torch.sin(2 * np.pi * f * t) for f, a in tones)
    right = sum(a * torch.sin(2 * np.pi * f * 1.01 * t + 0.5) for f, a in tones)
    noise = 0.03 * torch.randn(2, length, generator=generator, dtype=torch.float64)
    return (torch.stack([left, right]) + noise).float()


def make(out, name, cfg, length, training_checkpoint, seed):
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    # As utils/settings.py load_config reads it.
    with open(folder / "config.yaml") as f:
        config = ConfigDict(yaml.load(f, Loader=yaml.FullLoader))

    net = TFC_TDF_net(config)
    randomise(net, generator)
    state = net.state_dict()
    saved = {"epoch": 3, "best_metric": 1.5, "model_state_dict": state} if training_checkpoint else state
    torch.save(saved, folder / "model.ckpt")

    # As inference.py loads it.
    net = TFC_TDF_net(config)
    checkpoint = torch.load(folder / "model.ckpt", weights_only=False, map_location="cpu")
    load_start_checkpoint(ConfigDict({"start_check_point": str(folder / "model.ckpt"),
                                      "model_type": "mdx23c", "lora_checkpoint_loralib": ""}),
                          net, checkpoint, type_="inference")
    net.eval()

    mix = mix_of(length, generator)
    chunk_size = config.inference.get("chunk_size", config.audio.chunk_size)
    with torch.inference_mode():
        chunk_output = net(mix[:, :chunk_size][None])
    separated = demix(config, net, mix.numpy(), "cpu", model_type="mdx23c")
    stems = prefer_target_instrument(config)
    demixed = torch.from_numpy(np.stack([separated[s] for s in stems]))
    rms = demixed.pow(2).mean().sqrt().item()
    print(f"{name}: chunk_output {list(chunk_output.shape)}, demix {list(demixed.shape)}, rms {rms:.4f}")
    assert demixed.shape == (len(stems), 2, length) and 0.01 < rms < 100, rms
    save_file(
        {"mix": mix.contiguous(), "chunk_output": chunk_output.contiguous(),
         "demix": demixed.float().contiguous()},
        folder / "io.safetensors",
    )
    return {
        "name": name,
        "kind": "mdx23c",
        "model": f"{name}/model.ckpt",
        "config": f"{name}/config.yaml",
        "io": f"{name}/io.safetensors",
        "stems": stems,
        "sample_rate": RATE,
        "note": "chunk_output = model(mix[:, :chunk_size][None]), chunk_size = inference.chunk_size "
        "if the config has one, else audio.chunk_size; demix = MSST's demix(config, model, mix, "
        "model_type='mdx23c') (generic mode, as for the RoFormers), stems stacked in "
        "prefer_target_instrument order; float32 on the CPU",
        "tolerance": {"snr_db_min": 40.0},
    }


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    cases = [
        make(out, name, cfg, length, training_checkpoint, seed)
        for seed, (name, cfg, length, training_checkpoint) in enumerate(CASES, start=23)
    ]
    manifest = {"set": "mdx23c", "msst": "ZFTurbo/Music-Source-Separation-Training ccc011a",
                "cases": cases}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
