#!/usr/bin/env bash
# `bench/train_job.sh`: one real `train` job through the release `timbre` binary on this
# machine's default device, for the job's own profile (where each epoch's time went). The
# model is RVC's v2 40k with pitch at full size, from scratch; the dataset is SECONDS (default
# 150) of the voice-like signal of `make bench`, prepared with its full-size HuBERT and pm
# pitch (run `make bench` once first: it writes target/bench/models). EPOCHS (default 3),
# BATCH (default 4). Prints the dataset and the per-epoch profile.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${EPOCHS:-3}
batch=${BATCH:-4}
seconds=${SECONDS_OF_AUDIO:-150}
models=target/bench/models
work=target/bench/train-job
[[ -d $models/contentvec ]] || { echo "bench/train_job.sh: run make bench first ($models)" >&2; exit 1; }
cargo build --release -q -p timbre-cli
rm -rf "$work"
mkdir -p "$work"
.venv-bench/bin/python - "$work/voice.wav" "$seconds" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "bench")
from make_models import voice_like, write_wav
write_wav(Path(sys.argv[1]), voice_like(float(sys.argv[2]), seed=6))
PY
timbre() { TIMBRE_MODELS_DIR=$models target/release/timbre --data-dir "$work/library" --json "$@"; }
started=$(date +%s.%N)
timbre dataset prepare --name bench --voice Bench --rate 40k --version v2 --f0-method pm \
  "$work/voice.wav" > "$work/dataset.json"
prepared=$(date +%s.%N)
timbre train start --dataset bench --name bench --epochs "$epochs" --save-every "$epochs" \
  --batch-size "$batch" --pretrained none > "$work/train.json"
trained=$(date +%s.%N)
timbre train show 1 > "$work/training.json"
.venv/bin/python - "$work" "$started" "$prepared" "$trained" <<'PY'
import json, sys
work, started, prepared, trained = sys.argv[1], *map(float, sys.argv[2:])
dataset = json.load(open(f"{work}/dataset.json"))["result"]["dataset"]
training = json.load(open(f"{work}/training.json"))["training"]
print(f"dataset: {dataset['piece_count']} pieces, {dataset['total_secs']:.1f} s, prepared in {prepared - started:.1f} s")
print(f"training: {training['device']} {training['precision']}, batch {training['batch_size']}, "
      f"{training['epochs']} epochs, job {trained - prepared:.1f} s (with preview, export and index)")
print("| epoch | batches | epoch s | steps s | to device s | waited s | load s (threads) | assemble s | GPU busy |")
print("|---|---|---|---|---|---|---|---|---|")
for p in training["profile"]:
    gpu = "—" if p.get("gpu_percent") is None else f"{p['gpu_percent']:.0f} %"
    print(f"| {p['epoch']} | {p['batches']} | {p['seconds']:.1f} | {p['step_secs']:.1f} | {p.get('to_device_secs', 0):.3f} "
          f"| {p['waited_secs']:.2f} | {p['load_secs']:.2f} | {p['assemble_secs']:.3f} | {gpu} |")
PY
