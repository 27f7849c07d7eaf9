"""SwiftF0's reference for `tests/swift_f0/mod.rs`: the swift-f0 0.3.0 package itself on its bundled
`model.onnx`, through onnxruntime (`SwiftF0(threads=2).detect(x, 16000, fmin, fmax)`).

Usage: reference.py DIR FMIN FMAX; reads DIR/*.wav (16 kHz mono float), writes
DIR/reference.safetensors with, per input, `<name>.pitch` (Hz, float64) and `<name>.confidence`
(float32) per 16 ms frame; prints the model's path.
"""

import json
import sys
from pathlib import Path

import numpy as np
import soundfile
import torch
from safetensors.torch import save_file

import swift_f0


def main() -> None:
    folder, fmin, fmax = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    detector = swift_f0.SwiftF0(threads=2)
    out = {}
    for wav in sorted(folder.glob("*.wav")):
        audio, rate = soundfile.read(wav, dtype="float32")
        assert rate == 16000, f"{wav}: {rate} Hz"
        result = detector.detect(audio, 16000, fmin, fmax)
        out[f"{wav.stem}.pitch"] = torch.from_numpy(np.ascontiguousarray(result.pitch_hz))
        out[f"{wav.stem}.confidence"] = torch.from_numpy(result.confidence.astype(np.float32))
    save_file(out, str(folder / "reference.safetensors"))
    print(json.dumps({"model": str(Path(swift_f0.__file__).parent / "model.onnx")}))


if __name__ == "__main__":
    main()
