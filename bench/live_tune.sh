#!/usr/bin/env bash
# `timbre live tune` on this machine: the block it picks and each size's slowest block, with the
# tiny parity fixture voice and with the conversion benchmark's full-size random-weight models
# (bench/prepare.sh), for pm and RMVPE pitch; then, over a private PulseAudio null-sink loop
# (tests/e2e/pulse-loop.sh), `--measure`'s round trip with the pick. TIMBRE_BIN picks the binary
# (default: the test build's target/debug/timbre). Prints the lines docs/PERFORMANCE.md quotes.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/prepare.sh
timbre=${TIMBRE_BIN:-target/debug/timbre}
fixtures=${RVC_PARITY_DIR:-../shared/fixtures/rvc-parity}
[[ -x $timbre ]] || { echo "bench: $timbre is missing: make build-test" >&2; exit 2; }
work=$(mktemp -d)
trap 'tests/e2e/pulse-loop.sh stop "$work/pulse" >/dev/null 2>&1; rm -rf "$work"' EXIT
export TIMBRE_DEVICE=cpu OMP_WAIT_POLICY=PASSIVE
mkdir -p "$work/tiny-models"
cp "$fixtures/hubert_tiny/hubert_fairseq.pt" "$work/tiny-models/hubert_base.pt"
cp "$fixtures/rmvpe_tiny/rmvpe.pt" "$work/tiny-models/rmvpe.pt"
tune() { # name models-dir voice.pth pitch [extra…]
  local name=$1 models=$2 voice=$3 pitch=$4; shift 4
  export TIMBRE_MODELS_DIR=$models TIMBRE_DATA_DIR=$work/library-$name
  $timbre models import "$voice" --name voice > /dev/null 2>&1
  echo "== $name, $pitch pitch, 500 ms context, 50 ms crossfade"
  $timbre live tune --model voice --f0-method "$pitch" --context-ms 500 "$@" 2>/dev/null
}
tune tiny "$work/tiny-models" "$fixtures/synth_v1_f0_40k/model.pth" pm
tune tiny "$work/tiny-models" "$fixtures/synth_v1_f0_40k/model.pth" rmvpe
tune full "$PWD/$out/models" "$out/models/voice_a.pth" pm
tune full "$PWD/$out/models" "$out/models/voice_a.pth" rmvpe
tests/e2e/pulse-loop.sh start "$work/pulse" > /dev/null
while IFS='=' read -r key value; do export "$key=$value"; done < <(tests/e2e/pulse-loop.sh env "$work/pulse")
tune tiny-loop "$work/tiny-models" "$fixtures/synth_v1_f0_40k/model.pth" pm --measure
# The speech gate's saved compute on an input half silence (4 s of words, 4 s of a -60 dBFS
# room noise), full-size models, pm pitch, 250 ms blocks, 500 ms context: with and without.
$venv/bin/python - "$work/half-silence.wav" <<'PY'
import math, random, struct, sys, wave
rate, out = 48000, []
random.seed(1)
for i in range(4 * rate):  # syllables of a gliding harmonic tone, 0.25 s on, 0.1 s off
    t = i / rate
    on = (t % 0.35) < 0.25
    f0 = 120 + 40 * math.sin(t)
    out.append(0.3 * on * sum(math.sin(2 * math.pi * k * f0 * t) / k for k in range(1, 8)) * math.sin(math.pi * (t % 0.35) / 0.25) ** 2)
out += [random.uniform(-1e-3, 1e-3) for _ in range(4 * rate)]
f = wave.open(sys.argv[1], "wb"); f.setnchannels(1); f.setsampwidth(2); f.setframerate(rate)
f.writeframes(b"".join(struct.pack("<h", int(32767 * max(-1, min(1, x)))) for x in out))
PY
export TIMBRE_MODELS_DIR=$PWD/$out/models TIMBRE_DATA_DIR=$work/library-full
for gate in "" --speech-gate; do
  echo "== half silence, full-size, pm, 250 ms blocks ${gate:-(no gate)}"
  $timbre live file "$work/half-silence.wav" --out "$work/gated.wav" --model voice --f0-method pm \
    --block-ms 250 --context-ms 500 $gate 2>/dev/null
done
