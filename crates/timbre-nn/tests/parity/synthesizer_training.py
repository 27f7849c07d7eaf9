"""The reference's training forward of small seeded RVC generators, for synthesizer_training.rs.

For each case it writes into the folder given: `<case>_G.pth` (a generator training checkpoint,
`{"model": state_dict, ...}`) and `<case>.pt` (inputs, the random draws the forward made, its
outputs, the loss and every parameter's gradient); and `cases.json`: the cases' configs and the
state dict's names and shapes of a fresh model, for them and for two of RVC's own generators.
"""

import json
import sys

import torch
from rvc_next.engine.models.synthesizer import (
    SynthesizerTrnMs256NSFsid,
    SynthesizerTrnMs256NSFsid_nono,
    SynthesizerTrnMs768NSFsid,
    SynthesizerTrnMs768NSFsid_nono,
)

FIELDS = [
    "spec_channels", "segment_size", "inter_channels", "hidden_channels", "filter_channels",
    "n_heads", "n_layers", "kernel_size", "p_dropout", "resblock", "resblock_kernel_sizes",
    "resblock_dilation_sizes", "upsample_rates", "upsample_initial_channel",
    "upsample_kernel_sizes", "spk_embed_dim", "gin_channels", "sr",
]

CASES = [
    # v2 with pitch, upsampling like 40k's first and last stages (hop 20); two resblock1 kernels.
    {
        "name": "v2_f0_40k",
        "version": "v2",
        "f0": True,
        "features": 768,
        "config": [17, 6, 4, 6, 8, 2, 2, 3, 0, "1", [3, 5], [[1, 3, 5], [1, 3, 5]],
                   [10, 2], 8, [16, 4], 3, 4, 40000],
        "parametrizations": False,
        "lengths": [14, 11],
    },
    # v1 without pitch, three stages (hop 16), resblock2; saved with torch's newer weight-norm
    # names (parametrizations.weight.original0/1).
    {
        "name": "v1_nono_32k",
        "version": "v1",
        "f0": False,
        "features": 256,
        "config": [9, 5, 4, 4, 6, 2, 1, 3, 0, "2", [3], [[1, 3]], [4, 2, 2], 8, [8, 4, 4],
                   2, 3, 32000],
        "parametrizations": True,
        # Nothing padded: the attention runs unmasked, which at inference takes the fused path.
        "lengths": [14, 14],
    },
]


# RVC's own generators, whose fresh state dicts (names and shapes) are compared too.
STANDARD = [
    {
        "name": "standard_v2_f0_40k",
        "version": "v2",
        "f0": True,
        "config": [1025, 32, 192, 192, 768, 2, 6, 3, 0, "1", [3, 7, 11],
                   [[1, 3, 5], [1, 3, 5], [1, 3, 5]], [10, 10, 2, 2], 512, [16, 16, 4, 4],
                   109, 256, 40000],
    },
    {
        "name": "standard_v1_nono_32k",
        "version": "v1",
        "f0": False,
        "config": [513, 40, 192, 192, 768, 2, 6, 3, 0, "1", [3, 7, 11],
                   [[1, 3, 5], [1, 3, 5], [1, 3, 5]], [10, 4, 2, 2, 2], 512, [16, 16, 4, 4, 4],
                   109, 256, 32000],
    },
]


def build(case):
    classes = {
        ("v1", True): SynthesizerTrnMs256NSFsid,
        ("v1", False): SynthesizerTrnMs256NSFsid_nono,
        ("v2", True): SynthesizerTrnMs768NSFsid,
        ("v2", False): SynthesizerTrnMs768NSFsid_nono,
    }
    return classes[case["version"], case["f0"]](*case["config"], is_half=False)


def structure(case):
    with torch.device("meta"):
        model = build(case)
    return {
        "name": case["name"],
        "version": case["version"],
        "f0": case["f0"],
        "config": dict(zip(FIELDS, case["config"])),
        "state_dict": [[k, list(v.shape)] for k, v in model.state_dict().items()],
    }


def renamed(state):
    out = {}
    for k, v in state.items():
        if k.endswith(".weight_g"):
            k = k[: -len("weight_g")] + "parametrizations.weight.original0"
        elif k.endswith(".weight_v"):
            k = k[: -len("weight_v")] + "parametrizations.weight.original1"
        out[k] = v
    return out


def run(case, out_dir, seed):
    torch.manual_seed(seed)
    model = build(case)
    fresh = [[k, list(v.shape)] for k, v in model.state_dict().items()]
    # Random weights everywhere (a fresh flow is the identity: its `post` layers are zero).
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    model.train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    if case["parametrizations"]:
        state = renamed(state)
    torch.save(
        {"model": state, "iteration": 3, "optimizer": {}, "learning_rate": 1e-4},
        f"{out_dir}/{case['name']}_G.pth",
    )

    batch, frames, lengths = 2, 14, case["lengths"]
    config = dict(zip(FIELDS, case["config"]))
    inputs = {
        "phone": torch.randn(batch, frames, case["features"]),
        "phone_lengths": torch.tensor(lengths),
        "spec": torch.randn(batch, config["spec_channels"], frames).abs(),
        "spec_lengths": torch.tensor(lengths),
        "sid": torch.tensor([1, config["spk_embed_dim"] - 1]),
    }
    if case["f0"]:
        inputs["pitch"] = torch.randint(1, 256, (batch, frames))
        pitchf = torch.rand(batch, frames) * 300 + 80
        pitchf[:, 3:5] = 0  # unvoiced frames
        inputs["pitchf"] = pitchf

    draws = []
    randn_like, rand = torch.randn_like, torch.rand

    def recorded(draw):
        def wrapper(*args, **kwargs):
            t = draw(*args, **kwargs)
            draws.append(t.detach().clone())
            return t

        return wrapper

    torch.randn_like, torch.rand = recorded(randn_like), recorded(rand)
    try:
        if case["f0"]:
            result = model(inputs["phone"], inputs["phone_lengths"], inputs["pitch"],
                           inputs["pitchf"], inputs["spec"], inputs["spec_lengths"], inputs["sid"])
        else:
            result = model(inputs["phone"], inputs["phone_lengths"], inputs["spec"],
                           inputs["spec_lengths"], inputs["sid"])
    finally:
        torch.randn_like, torch.rand = randn_like, rand
    audio, ids_slice, x_mask, y_mask, (z, z_p, m_p, logs_p, m_q, logs_q) = result
    loss = audio.mean() + (z_p * m_p).sum() + 0.1 * (logs_p * logs_q).sum()
    loss.backward()
    outputs = {
        "audio": audio, "ids_slice": ids_slice, "x_mask": x_mask, "y_mask": y_mask, "z": z,
        "z_p": z_p, "m_p": m_p, "logs_p": logs_p, "m_q": m_q, "logs_q": logs_q, "loss": loss,
    }
    torch.save(
        {
            "inputs": inputs,
            "draws": draws,
            "outputs": {k: v.detach() for k, v in outputs.items()},
            "grads": {k: p.grad for k, p in model.named_parameters()},
        },
        f"{out_dir}/{case['name']}.pt",
    )
    return {
        "name": case["name"],
        "version": case["version"],
        "f0": case["f0"],
        "config": config,
        "state_dict": fresh,
    }


def main():
    out_dir = sys.argv[1]
    summary = {
        "cases": [run(case, out_dir, seed) for seed, case in enumerate(CASES, start=11)],
        "standard": [structure(case) for case in STANDARD],
    }
    with open(f"{out_dir}/cases.json", "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
