"""Times the reference RVC pipeline (PyPI rvc-next 0.2.16, the 2026 packaging of RVC WebUI) on the
conversion benchmark's input and models (bench/make_models.py), and prints JSON.

One fresh process measures three conversions of the input with RMVPE pitch and no index:
- cold: from exec (interpreter start and imports included) to the first output written:
  HuBERT, RMVPE and voice A loaded, the input decoded, converted and encoded as WAV;
- warm: the same conversion again with everything loaded;
- second_model: the same input with voice B, loaded then. The reference keeps no features
  between conversions, so this is a whole conversion again.
Per conversion, seconds in each stage, measured by wrapping the reference's own functions:
startup (cold only: interpreter and imports), load (Runtime.hubert / f0 / voice), io (decode
+ encode), rmvpe (`offline_f0`: the network, its decoding, interpolation), hubert
(`extract_features`, per segment), synthesizer (`net_g.infer`, per segment), other (the rest
of `OfflineConverter.convert`: high-pass, padding, protect, RMS mix, int16).

Run in .venv-bench: `python bench/reference.py DIR --chunking 3,10,60,65 [--threads 2]`, where
DIR is make_models.py's output folder. With `--profile TRACE`, a warm and a second-model
conversion then run under torch's profiler, and its Chrome trace goes to TRACE
(bench/profile_summary.py reads it).
"""

import os
import time


def seconds_since_exec() -> float:
    """Wall time since this process was started (10 ms resolution)."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


import argparse  # noqa: E402 - everything after the clock helper counts toward the cold start
import json  # noqa: E402
from collections import defaultdict  # noqa: E402
from dataclasses import astuple  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from rvc_next.engine import runtime as rt  # noqa: E402
from rvc_next.engine.audio.io import decode, encode  # noqa: E402
from rvc_next.engine.convert import offline  # noqa: E402
from rvc_next.engine.convert.params import VoiceParams  # noqa: E402
from rvc_next.engine.models.synthesizer import SynthesizerTrnMs768NSFsid  # noqa: E402

stages: defaultdict[str, float] = defaultdict(float)


def timed(stage: str, function, device):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        with torch.profiler.record_function(stage):
            result = function(*args, **kwargs)
        rt.synchronize(device)
        stages[stage] += time.perf_counter() - started
        return result

    return wrapper


def convert(runtime: rt.Runtime, voice_path: Path, folder: Path, name: str) -> dict:
    """One conversion as rvc-next's convert job runs it: decode, convert, encode."""
    stages.clear()
    started = time.perf_counter()
    load = timed("load", lambda: (runtime.hubert(), runtime.f0("rmvpe"), runtime.voice(voice_path)), runtime.device)
    voice = load()[2]
    audio, _ = timed("io", decode, runtime.device)(folder / "input.wav", 16000, mono=True)
    convert_started = time.perf_counter()
    out, sr = offline.OfflineConverter(runtime).convert(audio, voice, VoiceParams(f0_method="rmvpe"), index=None)
    converting = time.perf_counter() - convert_started
    timed("io", encode, runtime.device)(folder / f"reference_{name}.wav", out, sr, "wav")
    stages["other"] = converting - stages["rmvpe"] - stages["hubert"] - stages["synthesizer"]
    return {
        "seconds": time.perf_counter() - started,
        "input_seconds": len(audio) / 16000,
        "output_seconds": len(out) / sr,
        "stages": dict(stages),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Times rvc-next's conversion of the benchmark input.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--chunking", required=True, help="x_pad,x_query,x_center,x_max in whole seconds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="auto", help="rvc-next's device choice (auto: CUDA when there is one)")
    parser.add_argument("--profile", type=Path, help="then a warm and a second-model conversion under torch's profiler, their trace here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runtime = rt.Runtime(args.folder / "assets", device=args.device)
    # Timbre's chunking, so both convert the same segments (rvc-next would pick (1, 6, 38, 41) on a CPU).
    runtime.chunk = rt.ChunkConfig(*(int(float(v)) for v in args.chunking.split(",")))
    offline.offline_f0 = timed("rmvpe", offline.offline_f0, runtime.device)
    offline.extract_features = timed("hubert", offline.extract_features, runtime.device)
    SynthesizerTrnMs768NSFsid.infer = timed("synthesizer", SynthesizerTrnMs768NSFsid.infer, runtime.device)
    models = args.folder / "models"
    cold = convert(runtime, models / "voice_a.pth", args.folder, "cold")
    cold["stages"]["startup"] = seconds_since_exec() - cold["seconds"]
    cold["seconds"] += cold["stages"]["startup"]
    warm = convert(runtime, models / "voice_a.pth", args.folder, "warm")
    second = convert(runtime, models / "voice_b.pth", args.folder, "second_model")
    result = {
        "implementation": "rvc-next 0.2.16",
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "device": f"{runtime.choice.name} ({'fp16' if runtime.is_half else 'fp32'})",
        "threads": torch.get_num_threads(),
        "chunking": astuple(runtime.chunk),
        "cold": cold,
        "warm": warm,
        "second_model": second,
    }
    print(json.dumps(result, indent=2))
    if args.profile:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if runtime.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as profiler:
            for label, voice in (("warm job", "voice_a.pth"), ("second-model job", "voice_b.pth")):
                with torch.profiler.record_function(label):
                    convert(runtime, models / voice, args.folder, "profiled")
        profiler.export_chrome_trace(str(args.profile))


if __name__ == "__main__":
    main()
