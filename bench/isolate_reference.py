"""Times vocal isolation by ZFTurbo's Music-Source-Separation-Training (MSST), the reference for
crates/timbre-nn/benches/separation.rs: the same random-weight checkpoints and configs (BS-RoFormer
as viperx's ep 317, Mel-Band RoFormer as Kimberley Jensen's), separating the same kind of
generated stereo 44.1 kHz audio, with MSST's own model classes and its `demix`
(utils/model_utils.py: chunks of the config's chunk_size, its batch_size and num_overlap, the
linear fades, the reflect-padded edges) under its autocast (`training.use_amp`, on unless the
config turns it off: fp16 on CUDA, with the weights left in fp32, as MSST's inference runs).

Each model: built from its YAML (`ConfigDict(yaml.load(...))`, `Class(**config.model)`, as
MSST's utils/settings.py does), its checkpoint loaded strictly, moved to the device, eval; one
demix of a short input to warm up (--warmup-seconds, default min(10, --seconds): 10 s is one
full batch of four chunks and one of one; 0 skips it), then one timed demix of the whole
--seconds, the device synchronised before each clock reading. Prints JSON on stdout, one entry
per model: seconds per audio minute, the real-time factor (audio seconds per wall second;
"wall_per_audio_s" is the inverse, what Timbre's bench prints as "RTF"), the peak GPU memory
(torch.cuda.max_memory_allocated and _reserved, reset per model before its weights are moved,
so the weights are in it; nvidia-smi shows the reserved memory plus the CUDA context).

DIR holds what `BENCH_WRITE_DIR=DIR cargo bench -p timbre-nn --bench separation` writes:
bs_roformer_viperx_317.ckpt/.yaml and mel_band_roformer_kj.ckpt/.yaml (a state dict in MSST's
parameter names). MSST is not a package: --msst names a folder holding its models/bs_roformer/
and utils/model_utils.py (a checkout, or the copy in .gpu/msst). It imports beartype,
rotary_embedding_torch, einops, librosa (the mel filterbank), ml_collections and tqdm.

    python bench/isolate_reference.py DIR [--msst .gpu/msst] [--seconds 60] [--models bs,mel]
        [--device auto|cpu|cuda] [--precision fp16|fp32] [--threads 2] [--warmup-seconds S]

--precision fp32 sets `training.use_amp: false`. On a CUDA card of compute capability 8.0 or
more, MSST's attention (attend.py) allows only the flash kernel (and cuDNN's), neither of which
takes float32, so for fp32 on CUDA this script widens that choice to every SDPA kernel, as MSST's
own CPU configuration is; the JSON says so ("attention").
"""

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

RATE = 44_100
BLOCK_SECS = 10
MODELS = {
    # short name: (config/checkpoint name, MSST model_type, class name)
    "bs": ("bs_roformer_viperx_317", "bs_roformer", "BSRoformer"),
    "mel": ("mel_band_roformer_kj", "mel_band_roformer", "MelBandRoformer"),
}


def mix(frames: int, seed: int = 0) -> np.ndarray:
    """`frames` of a music-like stereo test mix, as separation.rs's `mix_block`: a few harmonic
    tones per channel plus a little noise (deterministic: numpy's generator, seeded)."""
    t = np.arange(frames, dtype=np.float64) / RATE

    def tone(freq: float, amp: float) -> np.ndarray:
        return np.sin(t * (2.0 * np.pi * freq)) * amp

    left = tone(220.0, 0.2) + tone(330.0, 0.1) + tone(440.0, 0.05)
    right = tone(220.0, 0.15) + tone(277.2, 0.1) + tone(554.4, 0.05)
    noise = np.random.default_rng(seed).standard_normal((2, frames)) * 0.02
    return (np.stack([left, right]) + noise).astype(np.float32)


def load_model(msst_classes: dict, short: str, folder: Path, device: torch.device):
    """MSST's model and config from `folder`, the checkpoint loaded as its inference.py does
    (load_start_checkpoint: unwrap `state`/`state_dict`/`model_state_dict`, strict load)."""
    from ml_collections import ConfigDict

    name, model_type, class_name = MODELS[short]
    with open(folder / f"{name}.yaml") as f:
        config = ConfigDict(yaml.load(f, Loader=yaml.FullLoader))
    model = msst_classes[class_name](**dict(config.model))
    state = torch.load(folder / f"{name}.ckpt", map_location="cpu", weights_only=True)
    for key in ("state", "state_dict", "model_state_dict"):
        if key in state:
            state = state[key]
    expected = set(model.state_dict())
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        sys.exit(
            f"{name}.ckpt does not fit MSST's {class_name}: {len(missing)} tensors missing "
            f"{missing[:10]}, {len(unexpected)} unexpected {unexpected[:10]}"
        )
    model.load_state_dict(state)  # strict: also fails on a shape that differs
    params = sum(p.numel() for p in model.parameters())
    return model.to(device).eval(), config, model_type, len(state), params


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="where BENCH_WRITE_DIR put the .ckpt and .yaml files")
    parser.add_argument("--msst", type=Path, default=Path(".gpu/msst"), help="folder with MSST's sources")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--models", default="bs,mel")
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, cuda:N")
    parser.add_argument("--precision", choices=["fp16", "fp32"], default="fp16")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup-seconds", type=float, default=None)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    device = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    )
    cuda = device.type == "cuda"
    frames = int(round(args.seconds * RATE))
    warmup_seconds = min(BLOCK_SECS, args.seconds) if args.warmup_seconds is None else args.warmup_seconds
    warmup = int(round(warmup_seconds * RATE))
    shorts = [m.strip() for m in args.models.split(",") if m.strip()]
    for short in shorts:
        if short not in MODELS:
            parser.error(f"unknown model `{short}`: expected {', '.join(MODELS)}")

    results = []
    # MSST prints (attend.py's flash notice, demix's messages) go to stderr: stdout is the JSON.
    with contextlib.redirect_stdout(sys.stderr):
        sys.path.insert(0, str(args.msst.resolve()))
        from models.bs_roformer import BSRoformer, MelBandRoformer  # noqa: E402
        from models.bs_roformer.attend import Attend, FlashAttentionConfig  # noqa: E402
        from utils.model_utils import demix  # noqa: E402

        classes = {"BSRoformer": BSRoformer, "MelBandRoformer": MelBandRoformer}
        audio = mix(frames)
        warm_audio = audio[:, :warmup]
        for short in shorts:
            if cuda:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)
            torch.manual_seed(0)
            started = time.perf_counter()
            model, config, model_type, tensors, params = load_model(classes, short, args.dir, device)
            config.training.use_amp = args.precision == "fp16"
            attention = "MSST's"
            if cuda and args.precision == "fp32":
                widened = 0
                for module in model.modules():
                    if isinstance(module, Attend) and module.cuda_config is not None:
                        module.cuda_config = FlashAttentionConfig(True, True, True)
                        widened += 1
                if widened:
                    attention = f"every SDPA kernel allowed ({widened} Attend modules widened for fp32)"
            sync(device)
            load_s = time.perf_counter() - started
            weights_mib = torch.cuda.memory_allocated(device) / 2**20 if cuda else None

            warmup_s = None
            if warmup > 0:
                started = time.perf_counter()
                demix(config, model, warm_audio, device, model_type=model_type)
                sync(device)
                warmup_s = round(time.perf_counter() - started, 3)

            sync(device)
            started = time.perf_counter()
            out = demix(config, model, audio, device, model_type=model_type)
            sync(device)
            elapsed = time.perf_counter() - started

            stems = np.stack([out[k] for k in out])
            if stems.shape[-1] != frames or not np.isfinite(stems).all():
                sys.exit(f"{short}: output {stems.shape} is not {frames} finite frames")
            results.append(
                {
                    "model": short,
                    "config": MODELS[short][0],
                    "class": MODELS[short][2],
                    "parameters_m": round(params / 1e6, 1),
                    "checkpoint_tensors": tensors,
                    "chunk_size": int(config.audio.chunk_size),
                    "batch_size": int(config.inference.batch_size),
                    "num_overlap": int(config.inference.num_overlap),
                    "stems": list(out),
                    "audio_s": frames / RATE,
                    "load_s": round(load_s, 2),
                    "warmup_audio_s": warmup / RATE,
                    "warmup_s": warmup_s,
                    "elapsed_s": round(elapsed, 3),
                    "s_per_audio_minute": round(elapsed / (frames / RATE) * 60.0, 3),
                    "realtime_factor": round((frames / RATE) / elapsed, 4),
                    "wall_per_audio_s": round(elapsed / (frames / RATE), 4),
                    "weights_gpu_mib": None if weights_mib is None else round(weights_mib),
                    "peak_gpu_allocated_mib": round(torch.cuda.max_memory_allocated(device) / 2**20) if cuda else None,
                    "peak_gpu_reserved_mib": round(torch.cuda.max_memory_reserved(device) / 2**20) if cuda else None,
                    "attention": attention,
                    "checksum": float(np.abs(stems).astype(np.float64).sum()),
                }
            )
            print(f"{short}: {results[-1]['s_per_audio_minute']} s per audio minute", file=sys.stderr)
            del model, out, stems
            if cuda:
                torch.cuda.empty_cache()

    print(
        json.dumps(
            {
                "implementation": "ZFTurbo/Music-Source-Separation-Training",
                "msst": str(args.msst),
                "msst_source": (args.msst / "SOURCE").read_text().strip() if (args.msst / "SOURCE").exists() else None,
                "torch": torch.__version__,
                "device": torch.cuda.get_device_name(device) if cuda else "cpu",
                "precision": args.precision,
                "autocast": "off (float32)" if args.precision == "fp32"
                else "fp16 (CUDA autocast, weights in float32)" if cuda
                else "none: MSST's CUDA autocast does nothing on the CPU (float32)",
                "threads": torch.get_num_threads(),
                "sample_rate": RATE,
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
