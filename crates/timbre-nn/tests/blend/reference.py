"""Voice blending's reference for `tests/blend/main.rs`: rvc-next 0.2.16's `merge_models`
(engine/models/merge.py, RVC's `merge`).

Usage: reference.py prepare MODEL.pth DIR: writes DIR/scaled.pth (MODEL with every tensor × 1.5,
another compatible model) and DIR/reference.pth (merge_models(MODEL, scaled, alpha=0.3)).
reference.py check DIR: loads DIR/ours.pth as rvc-next loads a voice (`load_voice`) and prints
the largest difference of its tensors from DIR/reference.pth's, and its `info`."""

import json
import sys
from pathlib import Path

import torch


def main() -> None:
    from rvc_next.engine.models.checkpoint import torch_load
    from rvc_next.engine.models.loader import load_voice
    from rvc_next.engine.models.merge import merge_models

    if sys.argv[1] == "prepare":
        model, folder = Path(sys.argv[2]), Path(sys.argv[3])
        data = torch_load(model)
        data["weight"] = {k: (v.float() * 1.5).half() for k, v in data["weight"].items()}
        torch.save(data, folder / "scaled.pth")
        merge_models(model, folder / "scaled.pth", folder / "reference.pth", alpha=0.3, info="blend")
        return
    folder = Path(sys.argv[2])
    load_voice(folder / "ours.pth", torch.device("cpu"), False)
    ours, reference = torch_load(folder / "ours.pth"), torch_load(folder / "reference.pth")
    assert sorted(ours["weight"]) == sorted(reference["weight"]), "different tensors"
    worst = max(float((ours["weight"][k].float() - reference["weight"][k].float()).abs().max()) for k in reference["weight"])
    dtypes = sorted({str(v.dtype) for v in ours["weight"].values()})
    print(json.dumps({"max_abs": worst, "info": ours["info"], "dtypes": dtypes, "version": ours["version"], "f0": int(ours["f0"])}))


if __name__ == "__main__":
    main()
