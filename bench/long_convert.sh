#!/usr/bin/env bash
# Peak memory of a conversion against the input's length: `timbre convert` (the fixture voice,
# HuBERT and pm pitch, so synthesis stays small and what grows with the input shows) on
# speech-like inputs of each length in MINUTES, peak RSS from /usr/bin/time. The figures go in
# docs/PERFORMANCE.md, "A long conversion's memory".
#   TIMBRE_BIN=target/release/timbre MINUTES="2 16 120" bench/long_convert.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TIMBRE_BIN:-target/release/timbre}
minutes=${MINUTES:-"2 16 120"}
fixtures=${TIMBRE_FIXTURES:-../shared/fixtures/rvc-parity}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models"
cp "$fixtures/hubert_tiny/hubert_fairseq.pt" "$work/models/hubert_base.pt"
timbre() { TIMBRE_MODELS_DIR="$work/models" TIMBRE_DEVICE=cpu "$bin" --data-dir "$work/data" "$@"; }
timbre --json models import "$fixtures/synth_v1_f0_40k/model.pth" --name voice >/dev/null
# Five minutes of phrases, repeated to each length (16 kHz mono 16-bit WAV).
.venv-bench/bin/python - "$work" $minutes <<'PY'
import sys
from pathlib import Path
import numpy as np
sys.path.insert(0, "bench")
from make_models import voice_like, write_wav
work, lengths = Path(sys.argv[1]), [float(m) for m in sys.argv[2:]]
base = voice_like(300.0, seed=7, rate=16_000)
for minutes in lengths:
    n = int(minutes * 60 * 16_000)
    write_wav(work / f"{minutes:g}min.wav", np.resize(base, n), rate=16_000)
PY
printf '| input | peak RSS | wall time |\n|---|---|---|\n'
for m in $minutes; do
  input="$work/${m}min.wav"
  /usr/bin/time -f '%M %e' -o "$work/time" \
    env TIMBRE_MODELS_DIR="$work/models" TIMBRE_DEVICE=cpu "$bin" --data-dir "$work/data" \
    --json convert --model voice --f0-method pm "$input" >"$work/out.json"
  grep -q '"ok": *true' "$work/out.json" || { cat "$work/out.json"; exit 1; }
  read -r kb secs <"$work/time"
  printf '| %s min | %d MB | %.0f s |\n' "$m" $((kb / 1024)) "$secs"
  rm -f "$input"
done
