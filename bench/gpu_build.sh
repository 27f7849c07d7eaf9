#!/usr/bin/env bash
# Fills .gpu/ for bench/gpu.sh on the CPU machine: the release builds of the training-step,
# CUDA-check, live-block, separation and conversion benchmarks (libtorch linked dynamically: the GPU
# machine's torch 2.11.0+cu130 serves them through LD_LIBRARY_PATH), debug info stripped, and
# the reference's packages that the GPU machine's image lacks (rvc-next and librosa with their
# compiled needs) as CPython 3.12 wheels. The binaries go in xz-compressed (.gpu/bin.tar.xz:
# about 8 MB against 31 MB), as the device's carry limit is 64 MiB with the working tree. .gpu/
# must be git-ignored (.git/info/exclude) and carried; its size is printed last. The isolation
# reference needs ZFTurbo's Music-Source-Separation-Training sources in .gpu/msst (not ours to
# commit; the registries do not have it): its models/bs_roformer/ and utils/model_utils.py from a
# checkout (taken at ccc011abf7f89dd7922bb2888d48493b575c0289 for the 2026-11-28 run).
set -euo pipefail
cd "$(dirname "$0")/.."
export LIBTORCH_USE_PYTORCH=1 PATH=$PWD/.venv/bin:$PATH
rm -rf .gpu/bin
mkdir -p .gpu/bin .gpu/wheels
executables() {
  cargo bench --no-run --message-format=json "$@" \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])'
}
{ executables -p timbre-nn --bench train_step --bench cuda_check --bench live_block --bench separation; executables -p timbre-cli --bench convert; } \
  | while read -r name path; do
    # The benchmarks only: the `timbre` binary that timbre-cli's benches build too stays behind.
    [[ $name == timbre ]] || strip --strip-all -o ".gpu/bin/$name" "$path"
  done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .gpu/wheels \
  rvc-next==0.2.16 librosa==0.11.0 av==18.1.0 soxr==1.1.0 soundfile==0.14.0 cffi pycparser audioread decorator pooch platformdirs
# The system libraries the binaries link that the GPU machine's image lacks.
for binary in .gpu/bin/*; do ldd "$binary"; done | awk '/libopus/ { print $3 }' | sort -u \
  | while read -r lib; do cp -L "$lib" .gpu/bin/; done
# MSST's RoFormers (bench/isolate_reference.py) import these beyond what the GPU machine has.
python3 -m pip download -q --no-deps --only-binary=:all: -d .gpu/isolate_wheels \
  beartype==0.23.1 rotary_embedding_torch==0.9.1 ml_collections==1.1.0
[[ -f .gpu/msst/utils/model_utils.py ]] || echo "gpu_build: .gpu/msst lacks MSST's sources (see the header): (f) will fail" >&2
ls -l .gpu/bin
tar -C .gpu -cJf .gpu/bin.tar.xz bin
rm -r .gpu/bin
du -sh .gpu .gpu/bin.tar.xz .gpu/wheels
