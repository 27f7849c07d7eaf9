#!/usr/bin/env bash
# `make bench`: the conversion benchmark against the reference Python pipeline. Creates
# .venv-bench from bench/requirements.txt (rvc-next, the reference; torch linked in from the
# project's .venv instead of downloaded again), writes the seeded random-weight models and the
# 60 s input into target/bench (bench/make_models.py), times Timbre's conversion
# (crates/timbre-cli/benches/convert.rs) and then the reference's (bench/reference.py), and writes
# the results into docs/PERFORMANCE.md (bench/report.py). Threads: BENCH_THREADS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${BENCH_THREADS:-2}
out=target/bench
venv=.venv-bench

requirements=$(sha256sum bench/requirements.txt | cut -c1-16)
if [[ ! -x $venv/bin/python || "$(cat $venv/.requirements 2>/dev/null)" != "$requirements" ]]; then
  echo "bench: creating $venv"
  rm -rf $venv
  .venv/bin/python -m venv $venv
  site_packages() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
  site_packages .venv/bin/python > "$(site_packages $venv/bin/python)/timbre-project-venv.pth"
  $venv/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
  echo "$requirements" > $venv/.requirements
fi

models=$(cat bench/make_models.py bench/requirements.txt | sha256sum | cut -c1-16)
if [[ "$(cat $out/.models 2>/dev/null)" != "$models" ]]; then
  echo "bench: writing the models and the input into $out"
  mkdir -p $out
  $venv/bin/python bench/make_models.py $out
  echo "$models" > $out/.models
fi

echo "bench: Timbre ($threads threads)"
cargo bench -p timbre-cli --bench convert -- "$PWD/$out" --threads "$threads" > $out/ours.json
chunking=$(python3 -c 'import json, sys; print(",".join(f"{v:g}" for v in json.load(sys.stdin)["chunking"]))' < $out/ours.json)
echo "bench: the reference ($threads threads)"
$venv/bin/python bench/reference.py $out --chunking "$chunking" --threads "$threads" > $out/reference.json
$venv/bin/python bench/report.py $out/ours.json $out/reference.json docs/PERFORMANCE.md \
  --command "make bench$( [[ $threads == 2 ]] || echo " BENCH_THREADS=$threads")"
echo "bench: results in docs/PERFORMANCE.md ($out/ours.json, $out/reference.json)"
