#!/usr/bin/env bash
# A live stream's per-block time alone and beside a conversion in another process, under each of
# libgomp's wait policies (BENCH_POLICIES: default, PASSIVE, spinN for GOMP_SPINCOUNT=N), with
# the conversion benchmark's full-size random-weight models (bench/prepare.sh), RMVPE pitch,
# 250 ms blocks, 8 s of input. libtorch's OpenMP threads spin while they wait; two libtorch
# workloads on the same cores then starve each other (docs/PERFORMANCE.md, "Live beside a
# conversion"). TIMBRE_BIN picks the binary (default: the test build's target/debug/timbre).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/prepare.sh
timbre=${TIMBRE_BIN:-target/debug/timbre}
[[ -x $timbre ]] || { echo "bench: $timbre is missing: make build-test" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TIMBRE_MODELS_DIR=$PWD/$out/models TIMBRE_DEVICE=cpu
$venv/bin/python - "$work" <<'PY'
import math, struct, sys, wave
def tone(path, secs, rate):
    f = wave.open(path, "wb")
    f.setnchannels(1); f.setsampwidth(2); f.setframerate(rate)
    hz = lambda i: 180 + 40 * math.sin(i / rate)
    f.writeframes(b"".join(struct.pack("<h", int(12000 * math.sin(2 * math.pi * hz(i) * i / rate))) for i in range(int(secs * rate))))
tone(sys.argv[1] + "/live.wav", 8, 48000)
tone(sys.argv[1] + "/song.wav", 300, 40000)
PY
runs=0
fresh_library() {
  runs=$((runs + 1))
  export TIMBRE_DATA_DIR=$work/library$runs
  $timbre models import "$out/models/voice_a.pth" --name voice > /dev/null 2>&1
}
live_blocks() {
  $timbre live file "$work/live.wav" --out "$work/live-out.wav" --model voice --f0-method rmvpe | sed -n 's/.*blocks of \(.*\))$/blocks of \1/p'
}
for policy in ${BENCH_POLICIES:-default PASSIVE spin10000}; do
  unset OMP_WAIT_POLICY GOMP_SPINCOUNT
  case $policy in
    PASSIVE) export OMP_WAIT_POLICY=PASSIVE ;;
    spin*) export GOMP_SPINCOUNT=${policy#spin} ;;
  esac
  fresh_library
  echo "$policy, alone: $(live_blocks)"
  fresh_library
  $timbre convert --model voice --f0-method rmvpe "$work/song.wav" --out "$work/converted$runs" > /dev/null 2>&1 &
  conversion=$!
  sleep 8
  echo "$policy, beside a conversion: $(live_blocks)"
  kill -0 $conversion 2>/dev/null || echo "bench: the conversion ended before the stream did: the figure above is not beside it" >&2
  kill $conversion 2>/dev/null; wait $conversion 2>/dev/null
done
