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
