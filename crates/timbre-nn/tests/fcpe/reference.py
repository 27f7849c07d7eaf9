"""FCPE's reference for `tests/fcpe/main.rs`: rvc-next 0.2.16's port of torchfcpe (equal to it
bit for bit) on torchfcpe 0.0.4's bundled weights, as RVC calls it (16 kHz, local_argmax,
threshold 0.006). Usage: reference.py DIR; reads DIR/*.wav (16 kHz mono float), writes
DIR/reference.safetensors with `<name>.f0` and `<name>.latent`, prints the weights' path."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import soundfile  # noqa: F401  (librosa's loader)
import torch
from safetensors.torch import save_file

from rvc_next.engine.f0.fcpe_model import load_fcpe


def bundled_weights() -> Path:
    # find_spec does not import torchfcpe (whose own imports, torchaudio among them, are not installed).
    spec = importlib.util.find_spec("torchfcpe")
    if spec is None or spec.origin is None:
        sys.exit("torchfcpe is not installed in the venv (scripts/setup.sh --test installs it)")
    return Path(spec.origin).parent / "assets" / "fcpe_c_v001.pt"


def main() -> None:
    folder = Path(sys.argv[1])
    weights = bundled_weights()
    torch.set_num_threads(2)
    model = load_fcpe(weights, "cpu")
    out = {}
    for wav in sorted(folder.glob("*.wav")):
        audio, rate = soundfile.read(wav, dtype="float32")
        assert rate == 16000, f"{wav}: {rate} Hz"
        x = torch.from_numpy(np.ascontiguousarray(audio)).unsqueeze(0)
        with torch.no_grad():
            mel = model.wav2mel(x, 16000)
            latent = model.model(mel)
            f0 = model.infer(x, sr=16000, decoder_mode="local_argmax", threshold=0.006)
        out[f"{wav.stem}.f0"] = f0.flatten().contiguous()
        out[f"{wav.stem}.latent"] = latent.squeeze(0).contiguous()
    save_file(out, str(folder / "reference.safetensors"))
    print(json.dumps({"weights": str(weights)}))


if __name__ == "__main__":
    main()
