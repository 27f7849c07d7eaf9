"""The live engine's reference for `tests/live_parity/main.rs`: rvc-next 0.2.16's `StreamEngine`
(engine/stream/engine.py) on the RVC parity fixtures, built as rvc-next's loaders build them
(`load_hubert`, `load_voice`, `load_index`, `RMVPE`, `FcpeProvider`), with every random draw of
the synthesizer zero (z_p = m_p, SineGen's initial phases and noise 0), on the CPU in float32.

Usage: reference.py FIXTURES INPUT.wav PARAMS.json FCPE_WEIGHTS OUT.safetensors
INPUT is mono float32 at the device rate; PARAMS holds block_ms, crossfade_ms, context_ms,
sample_rate, f0_method, transpose, index_rate, threshold_db, formant_shift, voice (a fixture folder) and index
(a fixture file or null). OUT gets `output`, the engine's blocks joined."""

import json
import sys
from pathlib import Path

import numpy as np
import soundfile
import torch
from safetensors.torch import save_file


def zero_random_draws() -> None:
    torch.randn_like = lambda x, *a, **k: torch.zeros_like(x)
    real_rand = torch.rand
    torch.rand = lambda *size, **k: torch.zeros(*size, **{key: v for key, v in k.items() if key in ("device", "dtype")})
    assert real_rand is not None


def tiny_rmvpe(path: Path):
    """rvc-next's RMVPE on a checkpoint whose sizes differ from the real one's: its own
    constructor, with E2E given the sizes read from the weights."""
    from rvc_next.engine.f0 import rmvpe as module

    state = torch.load(path, map_location="cpu", weights_only=True)
    blocks = len({k.split(".")[5] for k in state if k.startswith("unet.encoder.layers.0.conv.")})
    layers = len({k.split(".")[3] for k in state if k.startswith("unet.encoder.layers.")})
    inter = len({k.split(".")[3] for k in state if k.startswith("unet.intermediate.layers.")})
    channels = state["unet.encoder.layers.0.conv.0.conv.0.weight"].shape[0]
    real_init = module.E2E.__init__

    def tiny_init(self, n_blocks, n_gru, kernel_size, *_rest):
        real_init(self, blocks, n_gru, kernel_size, layers, inter, 1, channels)

    module.E2E.__init__ = tiny_init
    try:
        return module.RMVPE(str(path), is_half=False, device="cpu")
    finally:
        module.E2E.__init__ = real_init


class FixtureRuntime:
    """What `StreamEngine` asks of a `Runtime`: the device, the precision, HuBERT and the f0 models."""

    def __init__(self, hubert, f0):
        self.device = torch.device("cpu")
        self.is_half = False
        self._hubert = hubert
        self._f0 = f0

    def hubert(self, embedder: str = "contentvec"):
        return self._hubert

    def f0(self, method: str):
        return self._f0[method]


class Provider:
    def __init__(self, model):
        self.model = model


def main() -> None:
    fixtures, input_wav, params_path, fcpe_weights, out = (Path(a) for a in sys.argv[1:6])
    params = json.loads(params_path.read_text())
    torch.set_num_threads(2)
    zero_random_draws()

    from rvc_next.engine.convert.params import VoiceParams
    from rvc_next.engine.f0.fcpe import FcpeProvider
    from rvc_next.engine.features.hubert import load_hubert
    from rvc_next.engine.index.retrieval import load_index
    from rvc_next.engine.models.loader import load_voice
    from rvc_next.engine.stream.engine import StreamEngine
    from rvc_next.engine.stream.params import StreamParams

    f0 = {"pm": None}
    if params["f0_method"] == "rmvpe":
        f0["rmvpe"] = Provider(tiny_rmvpe(fixtures / "rmvpe_tiny" / "rmvpe.pt"))
    if params["f0_method"] == "fcpe":
        f0["fcpe"] = FcpeProvider(fcpe_weights, torch.device("cpu"))
    runtime = FixtureRuntime(load_hubert(fixtures / "hubert_tiny" / "hf", torch.device("cpu")), f0)
    voice = load_voice(fixtures / params["voice"] / "model.pth", torch.device("cpu"), False)
    index = load_index(fixtures / params["index"]) if params.get("index") else None
    voice_params = VoiceParams(pitch=params["transpose"], f0_method=params["f0_method"], index_rate=params["index_rate"], formant=params["formant_shift"])
    stream = StreamParams(
        block_ms=params["block_ms"], crossfade_ms=params["crossfade_ms"], context_ms=params["context_ms"], threshold_db=params["threshold_db"]
    )
    audio, rate = soundfile.read(input_wav, dtype="float32")
    assert rate == params["sample_rate"], f"{input_wav}: {rate} Hz"
    engine = StreamEngine(runtime, voice, voice_params, stream, rate, index)
    block = engine.block_size
    blocks = [engine.process(audio[i : i + block]) for i in range(0, len(audio) - block + 1, block)]
    output = torch.from_numpy(np.concatenate(blocks).astype(np.float32))
    save_file({"output": output.contiguous()}, str(out))
    print(json.dumps({"blocks": len(blocks), "block": block}))


if __name__ == "__main__":
    main()
