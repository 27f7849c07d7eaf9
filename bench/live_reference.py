"""Times rvc-next 0.2.16's live engine (`engine/stream/engine.py`, `StreamEngine`) per block on
the benchmark's models (bench/make_models.py), as crates/timbre-nn/benches/live_block.rs times
Timbre's: the voice-like input at 48 kHz, RMVPE pitch, no index, the reference's defaults but
the block size; a few blocks to warm up, then the median and 95th percentile of the rest.

Run in .venv-bench: `python bench/live_reference.py DIR [--threads 2] [--blocks 250,100]
[--device cpu|cuda]`, where DIR is make_models.py's output folder. Prints JSON.
"""

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import torch
from rvc_next.engine import runtime as rt
from rvc_next.engine.audio.io import decode
from rvc_next.engine.convert.params import VoiceParams
from rvc_next.engine.stream.engine import StreamEngine
from rvc_next.engine.stream.params import StreamParams

RATE = 48_000
WARMUP_BLOCKS = 3
TIMED_SECONDS = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--blocks", default="250,150,100,50")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runtime = rt.Runtime(args.folder / "assets", device=args.device)
    voice = runtime.voice(args.folder / "models" / "voice_a.pth")
    audio, _ = decode(args.folder / "input.wav", RATE, mono=True)
    audio = np.asarray(audio, dtype=np.float32)
    results = []
    for block_ms in (float(b) for b in args.blocks.split(",")):
        engine = StreamEngine(runtime, voice, VoiceParams(f0_method="rmvpe"), StreamParams(block_ms=block_ms), RATE, None)
        block = engine.block_size
        count = WARMUP_BLOCKS + int(TIMED_SECONDS * RATE) // block
        chunks = itertools.cycle([audio[i : i + block] for i in range(0, len(audio) - block + 1, block)])
        times = []
        for chunk in itertools.islice(chunks, count):
            started = time.perf_counter()
            engine.process(chunk)
            rt.synchronize(runtime.device)
            times.append(1000.0 * (time.perf_counter() - started))
        timed = sorted(times[WARMUP_BLOCKS:])
        results.append(
            {
                "block_ms": 1000.0 * block / RATE,
                "blocks": len(timed),
                "median_ms": float(np.percentile(timed, 50, method="inverted_cdf")),
                "p95_ms": float(np.percentile(timed, 95, method="inverted_cdf")),
            }
        )
    print(
        json.dumps(
            {
                "implementation": "rvc-next 0.2.16",
                "torch": torch.__version__,
                "device": f"{runtime.choice.name} ({'fp16' if runtime.is_half else 'fp32'})",
                "threads": torch.get_num_threads(),
                "sample_rate": RATE,
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
