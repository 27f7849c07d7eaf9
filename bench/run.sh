#!/usr/bin/env bash
# `make bench`: the conversion benchmark against the reference Python pipeline. Creates
# .venv-bench from bench/requirements.txt (rvc-next, the reference; torch linked in from the
# project's .venv instead of downloaded again), writes the seeded random-weight models and the
# 60 s input into target/bench (bench/make_models.py), times Timbre's conversion
# (crates/timbre-cli/benches/convert.rs) and then the reference's (bench/reference.py), and writes
# the results into docs/PERFORMANCE.md (bench/report.py), one table per CPU model and instruction
# set. Threads: BENCH_THREADS (default 2). BENCH_ISA=avx2 caps both sides at AVX2 on an AVX-512
# CPU: libtorch's own kernels (ATen), oneDNN's and MKL's, as on a CPU without AVX-512.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${BENCH_THREADS:-2}
command="make bench$( [[ $threads == 2 ]] || echo " BENCH_THREADS=$threads")"
case ${BENCH_ISA:-} in
  "") ;;
  avx2)
    export BENCH_ISA_CAP="ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2"
    export $BENCH_ISA_CAP
    command="$command BENCH_ISA=avx2" ;;
  *) echo "bench: BENCH_ISA is avx2 or unset, not '$BENCH_ISA'" >&2; exit 2 ;;
esac
source bench/prepare.sh

echo "bench: Timbre ($threads threads)"
cargo bench -p timbre-cli --bench convert -- "$PWD/$out" --threads "$threads" > $out/ours.json
chunking=$(python3 -c 'import json, sys; print(",".join(f"{v:g}" for v in json.load(sys.stdin)["chunking"]))' < $out/ours.json)
echo "bench: the reference ($threads threads)"
$venv/bin/python bench/reference.py $out --chunking "$chunking" --threads "$threads" > $out/reference.json
$venv/bin/python bench/report.py $out/ours.json $out/reference.json docs/PERFORMANCE.md --command "$command"
echo "bench: results in docs/PERFORMANCE.md ($out/ours.json, $out/reference.json)"
