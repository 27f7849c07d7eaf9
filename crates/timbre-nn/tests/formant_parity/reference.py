"""Formant shift and autotune's reference for `tests/formant_parity/main.rs`: rvc-next 0.2.16's
`OfflineConverter` (engine/convert/offline.py: `formant` and `autotune` of `VoiceParams`) on the RVC
parity fixtures (tiny HuBERT, a v1 f0 voice), every random draw of the synthesizer zero, on the CPU
in float32. The pitch is given (the f0 ours tracked, from F0.safetensors), so that only the
arithmetic after pitch tracking is compared.

Usage: reference.py FIXTURES INPUT.wav F0.safetensors CASES.json OUT.safetensors
CASES is a list of {name, transpose, formant, autotune}; OUT gets `<name>` (int16 as float32)."""

import json
import sys
from pathlib import Path

import numpy as np
import soundfile
import torch
from safetensors.torch import load_file, save_file


def zero_random_draws() -> None:
    torch.randn_like = lambda x, *a, **k: torch.zeros_like(x)
    torch.rand = lambda *size, **k: torch.zeros(*size, **{key: v for key, v in k.items() if key in ("device", "dtype")})


class GivenPitch:
    def __init__(self, f0: np.ndarray):
        self.f0 = f0

    def compute(self, x: np.ndarray, p_len: int) -> np.ndarray:
        out = np.zeros(p_len)
        n = min(p_len, len(self.f0))
        out[:n] = self.f0[:n]
        return out


class FixtureRuntime:
    def __init__(self, hubert, f0):
        from rvc_next.engine.runtime import ChunkConfig

        self.device = torch.device("cpu")
        self.is_half = False
        self.chunk = ChunkConfig(x_pad=3, x_query=10, x_center=60, x_max=65)
        self._hubert = hubert
        self._f0 = f0

    def hubert(self, embedder: str = "contentvec"):
        return self._hubert

    def f0(self, method: str):
        return self._f0


def main() -> None:
    fixtures, input_wav, f0_file, cases_file, out = (Path(a) for a in sys.argv[1:6])
    torch.set_num_threads(2)
    zero_random_draws()

    from rvc_next.engine.convert.offline import OfflineConverter
    from rvc_next.engine.convert.params import VoiceParams
    from rvc_next.engine.features.hubert import load_hubert
    from rvc_next.engine.models.loader import load_voice

    f0 = load_file(str(f0_file))["f0"].double().numpy()
    runtime = FixtureRuntime(load_hubert(fixtures / "hubert_tiny" / "hf", torch.device("cpu")), GivenPitch(f0))
    voice = load_voice(fixtures / "synth_v1_f0_40k" / "model.pth", torch.device("cpu"), False)
    audio, rate = soundfile.read(input_wav, dtype="float32")
    assert rate == 16000, f"{input_wav}: {rate} Hz"
    converter = OfflineConverter(runtime)
    results = {}
    for case in json.loads(cases_file.read_text()):
        params = VoiceParams(pitch=case["transpose"], formant=case["formant"], autotune=case["autotune"], f0_method="given", index_rate=0.0)
        output, _rate = converter.convert(audio, voice, params)
        results[case["name"]] = torch.from_numpy(output.astype(np.float32)).contiguous()
    save_file(results, str(out))


if __name__ == "__main__":
    main()
