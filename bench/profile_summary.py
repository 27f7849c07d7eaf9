"""Where a profiled job's time goes, from torch's profiler trace (a Chrome trace JSON, as
`torch.profiler.profile().export_chrome_trace` writes it and `timbre_torch_ext::profile` saves it).

For each named range (`record_function`, ours or the reference's), in the order they began and
indented by nesting, over the work launched while it was open:
- wall: the range's host time;
- GPU busy: the union of its kernels', copies' and memsets' device intervals, and their share of
  the wall time (the rest is the device waiting on the host: launches, host syncs, host work);
- launches: kernel launches (and graph launches), the host's calls that start device work;
- syncs: host time spent blocked in the runtime (stream/device/event synchronise, synchronous
  copies, and device-to-host copies, which wait for the device);
- copies: host-to-device and device-to-host transfers, count and device time;
- fp32 / fp16: device time of kernels whose names show the precision they compute in (the rest
  cannot be told from the name: elementwise kernels are templated on it but name it rarely);
then the kernels with the most device time over the whole trace.

Usage: python bench/profile_summary.py TRACE.json [--label NAME] [--top 12]
"""

import argparse
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field

LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch"}
SYNCS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaStreamWaitEvent"}
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
FP16 = re.compile(r"half|f16|fp16|bf16|h884|h1688|h16816|hmma|__nv_bfloat|c10::Half|c10::BFloat16", re.I)
FP32 = re.compile(r"\bfloat\b|sgemm|f32|tf32|s1688|s16816|\bfloat,|<float", re.I)


@dataclass
class Range:
    name: str
    start: float
    end: float
    depth: int = 0
    launches: int = 0
    sync_us: float = 0.0
    device: list = field(default_factory=list)  # (start, end, category, name, bytes, kind)


def union_length(intervals) -> float:
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def copy_kind(event) -> str:
    name = event.get("name", "")
    for kind in ("HtoD", "DtoH", "DtoD", "HtoH"):
        if kind in name:
            return kind
    return "other"


def load(path: str):
    with open(path) as f:
        trace = json.load(f)
    return [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]


def summarise(events, top: int) -> str:
    runtime_by_correlation = {}
    ranges = []
    for e in events:
        cat = e.get("cat")
        if cat == "user_annotation":
            ranges.append(Range(e["name"], e["ts"], e["ts"] + e.get("dur", 0)))
        elif cat in ("cuda_runtime", "cuda_driver"):
            correlation = e.get("args", {}).get("correlation")
            if correlation is not None:
                runtime_by_correlation[correlation] = e
    ranges.sort(key=lambda r: (r.start, -r.end))
    open_ranges = []
    for r in ranges:
        while open_ranges and open_ranges[-1].end < r.end:
            open_ranges.pop()
        r.depth = len(open_ranges)
        open_ranges.append(r)

    def containing(ts):
        return [r for r in ranges if r.start <= ts <= r.end]

    device_total = []
    kernels = defaultdict(lambda: [0, 0.0])
    for e in events:
        cat = e.get("cat")
        if cat in ("cuda_runtime", "cuda_driver"):
            name = e.get("name", "")
            blocking = name in SYNCS
            for r in containing(e["ts"]):
                if name in LAUNCHES:
                    r.launches += 1
                if blocking:
                    r.sync_us += e.get("dur", 0)
        elif cat in DEVICE_CATEGORIES:
            start, end = e["ts"], e["ts"] + e.get("dur", 0)
            args = e.get("args", {})
            launch = runtime_by_correlation.get(args.get("correlation"))
            kind = copy_kind(e) if cat == "gpu_memcpy" else ""
            item = (start, end, cat, e.get("name", ""), args.get("bytes", 0), kind)
            device_total.append(item)
            if cat == "kernel":
                kernels[e.get("name", "")][0] += 1
                kernels[e.get("name", "")][1] += end - start
            if launch is None:
                continue
            for r in containing(launch["ts"]):
                r.device.append(item)
                # A device-to-host copy returns only once the device has done everything
                # queued before it: its host call is a sync.
                if kind == "DtoH" and launch.get("name") != "cudaMemcpy":
                    r.sync_us += launch.get("dur", 0)

    lines = [
        f"{'range':<34} {'wall ms':>8} {'GPU ms':>7} {'busy':>5} {'launch':>6} {'sync ms':>7} "
        f"{'H2D':>9} {'D2H':>9} {'fp32 ms':>7} {'fp16 ms':>7}"
    ]
    for r in ranges:
        busy = union_length((s, e) for s, e, *_ in r.device) / 1000
        wall = (r.end - r.start) / 1000
        copies = {}
        for kind in ("HtoD", "DtoH"):
            items = [d for d in r.device if d[5] == kind]
            copies[kind] = f"{len(items)}/{sum(d[1] - d[0] for d in items) / 1000:.1f}"
        fp32 = sum(d[1] - d[0] for d in r.device if d[2] == "kernel" and FP32.search(d[3]) and not FP16.search(d[3]))
        fp16 = sum(d[1] - d[0] for d in r.device if d[2] == "kernel" and FP16.search(d[3]))
        label = ("  " * r.depth + r.name)[:34]
        lines.append(
            f"{label:<34} {wall:8.1f} {busy:7.1f} {100 * busy / wall if wall else 0:4.0f}% {r.launches:6d} "
            f"{r.sync_us / 1000:7.1f} {copies['HtoD']:>9} {copies['DtoH']:>9} {fp32 / 1000:7.1f} {fp16 / 1000:7.1f}"
        )
    lines.append("(copies: count/device ms)")
    if kernels:
        lines.append(f"top kernels by device time (of {sum(v[1] for v in kernels.values()) / 1000:.1f} ms in "
                     f"{sum(v[0] for v in kernels.values())} kernels):")
        for name, (count, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]:
            lines.append(f"  {us / 1000:8.2f} ms {count:6d}x  {name[:110]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--label", default=None)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    print(f"== profile: {args.label or args.trace}")
    print(summarise(load(args.trace), args.top))


if __name__ == "__main__":
    main()
