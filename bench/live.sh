#!/usr/bin/env bash
# `make bench-live`: the live engine's per-block time against rvc-next's `StreamEngine` on the
# benchmark's full-size random-weight models (bench/prepare.sh), block size by block size, ours
# then the reference's for each size so that both see the machine in the same state; the table
# goes into docs/PERFORMANCE.md (bench/live_report.py). BENCH_THREADS (default 2), BENCH_DEVICE
# (default cpu; cuda on a GPU machine), BENCH_BLOCKS (default 250,150,100,50 ms).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${BENCH_THREADS:-2}
device=${BENCH_DEVICE:-cpu}
blocks=${BENCH_BLOCKS:-250,150,100,50}
source bench/prepare.sh

cargo build --release -p timbre-nn --bench live_block
for block in ${blocks//,/ }; do
  echo "bench: $block ms blocks ($device, $threads threads)"
  cargo bench -q -p timbre-nn --bench live_block -- "$PWD/$out" --threads "$threads" \
    --device "$device" --blocks "$block" > "$out/live_ours_$block.json"
  $venv/bin/python bench/live_reference.py $out --threads "$threads" --device "$device" \
    --blocks "$block" > "$out/live_reference_$block.json"
done
$venv/bin/python bench/live_report.py "$out" "$blocks" docs/PERFORMANCE.md \
  --command "make bench-live$( [[ $threads == 2 ]] || echo " BENCH_THREADS=$threads")$( [[ $device == cpu ]] || echo " BENCH_DEVICE=$device")"
echo "bench: results in docs/PERFORMANCE.md ($out/live_*.json)"
