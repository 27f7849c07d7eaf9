#!/usr/bin/env bash
# Peak memory of a cover against the song's length: `timbre cover` with the fixtures' tiny models
# (the BS-RoFormer for the isolation, the v1 voice, HuBERT, pm pitch), an effects chain with every
# stateful effect, on songs of each length in MINUTES (bench/cover_song.py's song, its first minute
# repeated), peak RSS from /usr/bin/time. Small models keep every stage's own work small, so what
# grows with the song shows. The figures go in docs/PERFORMANCE.md, "A long cover's memory".
#   TIMBRE_BIN=target/release/timbre MINUTES="3 20" FORMAT=wav16 bench/long_cover.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TIMBRE_BIN:-target/release/timbre}
minutes=${MINUTES:-"3 20"}
format=${FORMAT:-wav16}
fixtures=${TIMBRE_FIXTURES:-../shared/fixtures}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models/separation"
cp "$fixtures/rvc-parity/hubert_tiny/hubert_fairseq.pt" "$work/models/hubert_base.pt"
cp "$fixtures/separation/bs_roformer_tiny/model.ckpt" "$work/models/separation/vocals.ckpt"
cp "$fixtures/separation/bs_roformer_tiny/config.yaml" "$work/models/separation/vocals.yaml"
export TIMBRE_MODELS_DIR=$work/models TIMBRE_DEVICE=cpu
"$bin" --data-dir "$work/data" --json models import \
  "$fixtures/rvc-parity/synth_v1_f0_40k/model.pth" --name voice >/dev/null
cat >"$work/effects.json" <<'JSON'
{"effects": [
  {"effect": "high_pass", "cutoff_hz": 80},
  {"effect": "de_esser"},
  {"effect": "compressor"},
  {"effect": "chorus"},
  {"effect": "delay"},
  {"effect": "reverb"},
  {"effect": "limiter"}
]}
JSON
(cd bench && ../.venv-bench/bin/python - "$work" $minutes <<'PY'
import sys
from pathlib import Path
import numpy as np
from cover_song import RATE, instrumental
from make_models import voice_like, write_wav
work, lengths = Path(sys.argv[1]), [float(m) for m in sys.argv[2:]]
vocals = voice_like(60.0, seed=6, rate=RATE)
minute = instrumental(60.0, seed=7) + np.stack([vocals, 0.9 * vocals], axis=1)
for minutes in lengths:
    write_wav(work / f"{minutes:g}min.wav", np.tile(minute, (int(minutes), 1)), RATE)
PY
)
printf '| song | peak RSS | wall time |\n|---|---|---|\n'
for m in $minutes; do
  song="$work/${m}min.wav"
  /usr/bin/time -f '%M %e' -o "$work/time" "$bin" --data-dir "$work/data" --json cover "$song" \
    --model voice --f0-method pm --separation vocals --effects "$work/effects.json" \
    --format "$format" --out "$work/covers" >"$work/out.json"
  grep -q '"ok": *true' "$work/out.json" || { cat "$work/out.json"; exit 1; }
  read -r kb secs <"$work/time"
  printf '| %s min | %d MB | %.0f s |\n' "$m" $((kb / 1024)) "$secs"
  rm -f "$song"
done
