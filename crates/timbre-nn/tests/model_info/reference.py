"""Reads an edited model as the reference does, for `tests/model_info/main.rs`: rvc-next 0.2.16's
`torch_load` (weights_only) and `load_voice`; prints its descriptive entries and the largest
difference of its tensors from the original's.

Usage: reference.py ORIGINAL.pth EDITED.pth"""

import json
import sys

import torch


def main() -> None:
    from rvc_next.engine.models.checkpoint import torch_load
    from rvc_next.engine.models.loader import load_voice

    original, edited = torch_load(sys.argv[1]), torch_load(sys.argv[2])
    load_voice(sys.argv[2], torch.device("cpu"), False)
    assert sorted(original["weight"]) == sorted(edited["weight"]), "different tensors"
    worst = max(float((original["weight"][k].float() - edited["weight"][k].float()).abs().max()) for k in original["weight"])
    same = {k: edited[k] == original[k] for k in ("config", "sr", "f0", "version") if k in original}
    print(json.dumps({k: edited.get(k) for k in ("model_name", "author", "description", "info")} | {"max_abs": worst, "same": same}))


if __name__ == "__main__":
    main()
