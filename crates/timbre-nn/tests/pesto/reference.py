"""PESTO's reference for `tests/pesto/mod.rs`: pesto-pitch 2.0.1 itself on its bundled
`mir-1k_g7.ckpt` (`pesto.predict(x, 16000, step_size=10., model_name="mir-1k_g7",
reduction="alwa")`).

Usage: reference.py DIR; reads DIR/*.wav (16 kHz mono float), writes DIR/reference.safetensors with,
per input, `<name>.pitch` (Hz), `<name>.confidence` and `<name>.activations`; prints the
checkpoint's path.

pesto imports torchaudio at import time, only for loading files; it is not installed, so it is
registered as an empty module.
"""

import json
import sys
import types
from pathlib import Path

import numpy as np
import soundfile
import torch
from safetensors.torch import save_file

sys.modules.setdefault("torchaudio", types.ModuleType("torchaudio"))

import pesto  # noqa: E402


def main() -> None:
    folder = Path(sys.argv[1])
    torch.set_num_threads(2)
    out = {}
    for wav in sorted(folder.glob("*.wav")):
        audio, rate = soundfile.read(wav, dtype="float32")
        assert rate == 16000, f"{wav}: {rate} Hz"
        x = torch.from_numpy(np.ascontiguousarray(audio))
        _, pitch, confidence, activations = pesto.predict(x, 16000, step_size=10.0, model_name="mir-1k_g7", reduction="alwa")
        out[f"{wav.stem}.pitch"] = pitch.contiguous()
        out[f"{wav.stem}.confidence"] = confidence.contiguous()
        out[f"{wav.stem}.activations"] = activations.contiguous()
    save_file(out, str(folder / "reference.safetensors"))
    print(json.dumps({"weights": str(Path(pesto.__file__).parent / "weights" / "mir-1k_g7.ckpt")}))


if __name__ == "__main__":
    main()
