"""The floor under each conversion stage: floating-point operations per second of input, counted
by torch's FlopCounterMode while rvc-next 0.2.16 converts the benchmark input (`make bench`'s
60 s, full-size random-weight models, one segment), divided by a device's peak. Weights are
random, but the work is that of a real conversion: every op runs on the same shapes.

FlopCounterMode counts matrix products, convolutions and attention; RMVPE's BiGRU runs as one
fused op it does not see, so its cost is added from its shapes (`gru_flops`).

Run in .venv-bench: `python bench/flops.py target/bench --threads 2` (prints JSON)."""

import argparse
import json
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode
from rvc_next.engine import runtime as rt
from rvc_next.engine.audio.io import decode
from rvc_next.engine.convert import offline
from rvc_next.engine.convert.params import VoiceParams
from rvc_next.engine.models.synthesizer import SynthesizerTrnMs768NSFsid

flops: dict[str, int] = {}


def counted(stage: str, function):
    def wrapper(*args, **kwargs):
        with FlopCounterMode(display=False) as counter:
            result = function(*args, **kwargs)
        flops[stage] = flops.get(stage, 0) + counter.get_total_flops()
        return result

    return wrapper


def gru_flops(frames: int, inputs: int = 384, hidden: int = 256, directions: int = 2) -> int:
    """Multiply-adds of a GRU's three gates (input and recurrent products) over `frames`, ×2."""
    return 2 * directions * frames * 3 * (inputs * hidden + hidden * hidden)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runtime = rt.Runtime(args.folder / "assets", device="cpu")
    runtime.chunk = rt.ChunkConfig(3, 10, 60, 65)
    offline.offline_f0 = counted("rmvpe", offline.offline_f0)
    offline.extract_features = counted("hubert", offline.extract_features)
    SynthesizerTrnMs768NSFsid.infer = counted("synthesizer", SynthesizerTrnMs768NSFsid.infer)
    audio, _ = decode(args.folder / "input.wav", 16000, mono=True)
    voice = runtime.voice(args.folder / "models" / "voice_a.pth")
    offline.OfflineConverter(runtime).convert(audio, voice, VoiceParams(f0_method="rmvpe"), index=None)
    seconds = len(audio) / 16000
    padded_frames = (len(audio) + 2 * 3 * 16000) // 160
    flops["rmvpe"] += gru_flops(padded_frames)
    print(json.dumps({
        "input_seconds": seconds,
        "flops": flops,
        "gflops_per_input_second": {k: v / seconds / 1e9 for k, v in flops.items()},
    }, indent=2))


if __name__ == "__main__":
    main()
