#!/usr/bin/env bash
# bench/gpu.sh: both sides of the GPU benchmarks in one run on the lent GPU machine (about 3-4
# minutes; docs/PERFORMANCE.md, "GPU run"). Built on the CPU machine by bench/gpu_build.sh, which
# fills .gpu/ (release binaries, debug info stripped, xz-compressed, and the reference's
# packages the machine's image lacks as cp312 wheels); run there from the repository root with
# .gpu carried:
#   bash bench/gpu.sh                       # or GPU_PARTS=convert,live bash bench/gpu.sh
# It writes into $OUT (at most 8 files come back): summary.txt (the figures), log.txt (all
# output), convert_ours.json, convert_reference.json, util.csv (nvidia-smi every 50 ms, each row
# labelled with its phase), profiles.txt (where the time goes: bench/profile_summary.py over
# torch's profiler traces of a training step and of a warm and a second-model conversion, both
# sides), traces.tar.xz (those traces) and isolate_reference.json.
#  (c) cuda_check: the fused AdamW on CUDA against torch's AdamW(fused=True) (bench/gpu_check_adamw.py)
#      and a CUDA graph captured, replayed and timed against the eager run;
#  (a) the training step at batch 8 and 16, ours (fused AdamW) and rvc-next's (bench/train_reference.py);
#  (b) the conversion benchmark (models written here by bench/make_models.py), ours and rvc-next's;
#  (d) live blocks of 250, 100 and 50 ms on those models: ours with the block's CUDA graphs and
#      without (and how far the two outputs differ), and rvc-next's StreamEngine;
#  (e) the profiles' summaries;
#  (f) vocal isolation: full-size random-weight BS- and Mel-Band RoFormers separating 60 s, ours
#      (the separation bench) and ZFTurbo's MSST (bench/isolate_reference.py, its sources in
#      .gpu/msst) on the same checkpoints, fp16;
#  (g) data-parallel training's collectives on the GPU: the training step at batch 8 as one rank of
#      an NCCL group and of a Gloo group with CUDA tensors, the gradients' all-reduce time and
#      volume per step (one GPU: the collectives run, nothing to average).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-target/gpu-out}
carry=${GPU_CARRY:-.gpu}
python=${GPU_PYTHON:-/opt/torch/.venv/bin/python3}
threads=${BENCH_THREADS:-16}
models=/tmp/bench-gpu
traces=/tmp/traces
mkdir -p "$out" "$traces"
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
exec > >(tee -a "$out/log.txt") 2>&1
# Into the summary and the log (stderr), never into a phase's redirected stdout.
summary() { echo "$*" | tee -a "$out/summary.txt" >&2; }

summary "== $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader) ($(date -u +%FT%TZ))"
$python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  "$carry"/wheels/*.whl "$carry"/isolate_wheels/*.whl \
  || { summary "installing the reference's wheels failed"; exit 1; }
export PYTHONPATH=/tmp/site
mkdir -p /tmp/gpu && tar -C /tmp/gpu -xJf "$carry/bin.tar.xz" || { summary "unpacking the binaries failed"; exit 1; }
bin=/tmp/gpu/bin
# libopus (the Opus export's) is not in the GPU machine's image: gpu_build.sh carries it.
export LD_LIBRARY_PATH=$bin:$LD_LIBRARY_PATH
# GPU_PARTS picks parts (default all): check, train, convert, live, dist, isolate.
parts=${GPU_PARTS:-check,train,convert,live,dist,isolate}
wants() { [[ ",$parts," == *",$1,"* ]]; }

# nvidia-smi's utilisation every 50 ms while PHASE runs COMMAND; its mean (all samples, and the
# busy ones) goes into the summary.
phase() {
  local name=$1 limit=$2; shift 2
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 50 \
    | sed -u "s/^/$name, /" >> "$out/util.csv" &
  local sampler=$!
  local start=$SECONDS
  timeout "$limit" "$@"
  local status=$?
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  summary "$(awk -F', ' -v p="$name" -v s="$status" -v t="$((SECONDS - start))" '$1 == p {
      n++; u += $2; if ($2 > 0) { b++; bu += $2 } if ($3 > m) m = $3 }
    END { printf "%s: exit %s, %s s, GPU busy %.0f %% (%.0f %% of busy samples), peak %d MiB, %d samples\n",
      p, s, t, n ? u / n : 0, b ? bu / b : 0, m, n }' "$out/util.csv")"
  return $status
}

if wants check; then
echo "== (c) fused AdamW and CUDA graphs on CUDA"
phase cuda_check 90 "$bin/cuda_check" /tmp && \
  phase adamw_vs_torch 60 $python bench/gpu_check_adamw.py /tmp | tee -a "$out/summary.txt"

fi
if wants train; then
echo "== (a) training step, batch 8 and 16"
BENCH_BATCHES=8,16 BENCH_THREADS=$threads BENCH_PROFILE=$traces/train_ours.json \
  phase train_ours 120 "$bin/train_step" | tee /tmp/train_ours.txt
phase train_reference 150 $python bench/train_reference.py --batches 8,16 --threads "$threads" \
  --profile $traces/train_reference.json | tee /tmp/train_reference.txt
grep -h "batch " /tmp/train_ours.txt /tmp/train_reference.txt | tee -a "$out/summary.txt"

fi
if wants convert; then
echo "== (b) conversion: models, ours, the reference"
phase make_models 150 $python bench/make_models.py $models
phase convert_ours 120 "$bin/convert" $models --threads "$threads" --profile $traces/convert_ours.json \
  > "$out/convert_ours.json"
chunking=$($python -c 'import json, sys; print(",".join(f"{v:g}" for v in json.load(sys.stdin)["chunking"]))' < "$out/convert_ours.json")
phase convert_reference 180 $python bench/reference.py $models --chunking "${chunking:-3,10,60,65}" --threads "$threads" \
  --profile $traces/convert_reference.json > "$out/convert_reference.json"
$python - "$out/convert_ours.json" "$out/convert_reference.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
ours, ref = (json.load(open(p)) for p in sys.argv[1:3])
for key in ("cold", "warm", "second_model"):
    a, b = ours[key]["seconds"], ref[key]["seconds"]
    print(f"convert {key}: ours {a:.3f} s, reference {b:.3f} s, speed-up {b / a:.2f}x")
print("stages (ours):", json.dumps(ours.get("stages", {})))
print("stages (reference, warm):", json.dumps(ref["warm"]["stages"]))
PY

fi
if wants live; then
echo "== (d) live blocks: ours with CUDA graphs and without, the reference"
live_blocks=250,100,50
phase live_ours 120 "$bin/live_block" $models --device cuda --threads "$threads" --blocks $live_blocks \
  > /tmp/live_ours.json
phase live_reference 120 $python bench/live_reference.py $models --device cuda --threads "$threads" \
  --blocks $live_blocks > /tmp/live_reference.json
$python - /tmp/live_ours.json /tmp/live_reference.json <<'PY' | tee -a "$out/summary.txt"
import json, sys
ours, ref = (json.load(open(p))["results"] for p in sys.argv[1:3])
for r in ref:
    for o in (o for o in ours if round(o["block_ms"]) == round(r["block_ms"])):
        mode = "graphs" if o["cuda_graphs"] else "eager"
        print(f"live {o['block_ms']:.0f} ms ({mode}, replayed {o['graphs_replayed']}): ours {o['median_ms']:.2f} ms "
              f"(p95 {o['p95_ms']:.2f}), reference {r['median_ms']:.2f} ms, ratio {o['median_ms'] / r['median_ms']:.2f}, "
              f"max difference from graphs {o.get('max_difference_from_graphs', 0):.2e}")
PY

fi
echo "== (e) where the time goes: torch's profiler, both sides"
for trace in train_ours train_reference convert_ours convert_reference; do
  [[ -s $traces/$trace.json ]] && $python bench/profile_summary.py "$traces/$trace.json" --label "$trace"
done > "$out/profiles.txt" 2>&1
cat "$out/profiles.txt" >&2
XZ_OPT=-T0 tar -C "$traces" -cJf "$out/traces.tar.xz" . && ls -l "$out/traces.tar.xz" >&2

if wants dist; then
echo "== (g) data-parallel: one-rank NCCL and Gloo groups, the training step at batch 8"
BENCH_GROUP=nccl BENCH_BATCHES=8 BENCH_STEPS=3 BENCH_THREADS=$threads \
  phase dist_nccl 90 "$bin/train_step" | tee /tmp/dist.txt
BENCH_GROUP=gloo BENCH_BATCHES=8 BENCH_STEPS=3 BENCH_THREADS=$threads \
  phase dist_gloo_cuda 90 "$bin/train_step" | tee -a /tmp/dist.txt
grep -h "ranks\|batch \|all-reduce" /tmp/dist.txt | tee -a "$out/summary.txt"

fi
if wants isolate; then
echo "== (f) isolation: BS- and Mel-Band RoFormer, 60 s, ours and MSST's, fp16"
mkdir -p /tmp/separators
BENCH_WRITE_DIR=/tmp/separators phase write_separators 120 "$bin/separation"
BENCH_SECS=60 BENCH_THREADS=$threads phase isolate_ours 180 "$bin/separation" | tee /tmp/isolate_ours.txt
phase isolate_reference 240 $python bench/isolate_reference.py /tmp/separators --msst "$carry/msst" --seconds 60 \
  --models bs,mel --precision fp16 --threads "$threads" > "$out/isolate_reference.json"
grep -h "per audio minute" /tmp/isolate_ours.txt | tee -a "$out/summary.txt"
$python - "$out/isolate_reference.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    name = r["model"]
    print(f"  MSST {name}: {r.get('s_per_audio_minute', float('nan')):.2f} s per audio minute, "
          f"{r.get('realtime_factor', float('nan')):.1f}x real time, peak allocated {r.get('peak_gpu_allocated_mib', 0):.0f} MiB")
PY

fi
