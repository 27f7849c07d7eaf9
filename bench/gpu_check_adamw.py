"""Replays the fused AdamW steps that `cargo bench -p timbre-nn --bench cuda_check` took on CUDA
(its inputs and results in DIR/fused_adamw.safetensors) with torch's own AdamW(fused=True) on
CUDA, and prints the worst relative difference per step as JSON. Exits 1 past the tolerance.

python bench/gpu_check_adamw.py DIR
"""

import json
import sys

import torch
from safetensors.torch import load_file

TOLERANCE = 1e-6


def main() -> None:
    saved = load_file(f"{sys.argv[1]}/fused_adamw.safetensors", device="cuda")
    count = len([k for k in saved if k.startswith("initial.")])
    steps = len([k for k in saved if k.startswith("grad.") and k.endswith(".0")])
    params = [torch.nn.Parameter(saved[f"initial.{i}"].clone()) for i in range(count)]
    # As timbre-nn's test (AdamWConfig::default with lr 1e-3): RVC's betas and eps.
    optimizer = torch.optim.AdamW(params, 1e-3, betas=(0.8, 0.99), eps=1e-9, weight_decay=0.01, fused=True)
    worst = []
    for k in range(steps):
        for i, p in enumerate(params):
            p.grad = saved[f"grad.{k}.{i}"]
        optimizer.step()
        errors = []
        for i, p in enumerate(params):
            ours = saved[f"after.{k}.{i}"].double()
            theirs = p.detach().double()
            errors.append(float((ours - theirs).abs().max() / theirs.abs().max()))
        worst.append(max(errors))
    report = {"fused_adamw_cuda_worst_relative_error_per_step": worst, "tolerance": TOLERANCE}
    print(json.dumps(report))
    sys.exit(0 if max(worst) <= TOLERANCE else 1)


if __name__ == "__main__":
    main()
