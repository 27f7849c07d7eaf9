#!/usr/bin/env bash
# `bench/judge_overtraining.sh`: a real-size training judged checkpoint by checkpoint, through
# the release `timbre` binary on this machine's default device: RVC's v2 40k with pitch,
# fine-tuned from the pretrained bases when MODELS (default: models/) holds them (from scratch
# otherwise), on VOICE (a WAV of one speaker; default: SECONDS_OF_AUDIO, 150, of the voice-like
# signal of `make bench`), EPOCHS (default 100) at BATCH (default 8), a checkpoint every
# SAVE_EVERY (default 5) epochs. Trained far past its best on a small dataset, the judge's table
# should show the held-out mel distance turn up while the training one keeps falling, and the
# recommendation stay before it. Prints the judge's table and its time per checkpoint (from the
# job's `checkpoint` events to the scores).
#
#   bench/judge_overtraining.sh                         # on a GPU machine, the experiment
#   EPOCHS=2 SAVE_EVERY=1 BATCH=4 bench/judge_overtraining.sh   # on the CPU: the judge's cost
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${EPOCHS:-100}
save_every=${SAVE_EVERY:-5}
batch=${BATCH:-8}
seconds=${SECONDS_OF_AUDIO:-150}
models=${MODELS:-models}
work=target/bench/judge
[[ -f $models/hubert_base.pt || -d $models/contentvec ]] || models=target/bench/models
[[ -f $models/hubert_base.pt || -d $models/contentvec ]] ||
  { echo "bench/judge_overtraining.sh: no HuBERT in $models: run make bench first" >&2; exit 1; }
encoder=$(ls .venv/lib/python3*/site-packages/resemblyzer/pretrained.pt)
cargo build --release -q -p timbre-cli
rm -rf "$work"
mkdir -p "$work/models"
cp -rs "$(realpath "$models")/." "$work/models/"
ln -sf "$PWD/$encoder" "$work/models/speaker-encoder.pt"
voice=${VOICE:-$work/voice.wav}
if [[ -z ${VOICE:-} ]]; then
  .venv-bench/bin/python - "$voice" "$seconds" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "bench")
from make_models import voice_like, write_wav
write_wav(Path(sys.argv[1]), voice_like(float(sys.argv[2]), seed=6))
PY
fi
timbre() { TIMBRE_MODELS_DIR=$work/models target/release/timbre --data-dir "$work/library" --json "$@"; }
timbre dataset prepare --name judged --voice Judged --rate 40k --version v2 --f0-method pm \
  "$voice" > "$work/dataset.json"
timbre train start --dataset judged --name judged --epochs "$epochs" --save-every "$save_every" \
  --keep 2 --batch-size "$batch" > "$work/train.json"
timbre train show 1 > "$work/training.json"
job=$(.venv/bin/python -c 'import json,sys; print(json.load(open(sys.argv[1]))["training"]["job_id"])' "$work/training.json")
timbre jobs show "$job" > "$work/job.json"
.venv/bin/python - "$work" <<'PY'
import json, sys
from datetime import datetime
work = sys.argv[1]
shown = json.load(open(f"{work}/training.json"))
training, judge = shown["training"], shown["judge"]
held = json.load(open(f"{work}/dataset.json"))["result"]["dataset"]["report"]["held_out"]
events = json.load(open(f"{work}/job.json"))["events"]
at = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
saved = {e["data"]["step"]: at(e["at"]) for e in events if e["kind"] == "checkpoint"}
print(f"training: {training['device']} {training['precision']}, batch {training['batch_size']}, "
      f"{training['epoch']} epochs; held out {held['pieces']} pieces, {held['seconds']:.1f} s")
for e in events:
    if e["kind"].startswith("judge") or e["kind"] == "converged":
        print(f"event {e['kind']}: {e['data']}")
best = (judge.get("recommendation") or {}).get("step")
print("| step | epoch | similarity / ceiling | pitch RMSE ¢ | voicing | held-out mel | training mel | gap | buzz dB | judged in |")
print("|---|---|---|---|---|---|---|---|---|---|")
fmt = lambda v, d: "—" if v is None else f"{v:.{d}f}"
for s in judge["scores"]:
    took = at(s["at"]) - saved[s["step"]] if s["step"] in saved else None
    mark = " (recommended)" if s["step"] == best else ""
    print(f"| {s['step']}{mark} | {s['epoch']} | {fmt(s['similarity'], 3)} / {fmt(s['similarity_ceiling'], 3)} "
          f"| {fmt(s['pitch_rmse_cents'], 1)} | {fmt(s['voicing_agreement'], 3)} | {s['mel_distance']:.3f} "
          f"| {s['train_mel_distance']:.3f} | {s['mel_distance'] - s['train_mel_distance']:+.3f} "
          f"| {fmt(s['artefacts_db'], 2)} | {fmt(took, 1)} s |")
PY
