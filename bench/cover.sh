#!/usr/bin/env bash
# `make bench-cover`: the cover job's stage times on this machine's CPU for a 3-minute song
# (BENCH_SECS), with full-size random-weight models: Kimberley Jensen's Mel-Band RoFormer for the
# isolation (written by the separation benchmark, crates/timbre-nn/benches/separation.rs), and the
# conversion benchmark's HuBERT, RMVPE and v2 40k voices (bench/prepare.sh). The song
# (bench/cover_song.py) is covered with voice A and the "Clean vocal" effects to MP3, then with
# voice B, which reruns only conversion, effects and remix. Release build of `timbre`; the job's
# own stage times; the section of docs/PERFORMANCE.md written by bench/cover_report.py.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${BENCH_SECS:-180}
source bench/prepare.sh
dir=$out/cover
models=$dir/models
mkdir -p $models/separation
ln -sfn ../../models/contentvec $models/contentvec
ln -sfn ../../models/rmvpe.pt $models/rmvpe.pt
if [[ ! -f $models/separation/mel_band_roformer_kj.ckpt ]]; then
  echo "bench: writing the Mel-Band RoFormer into $models/separation"
  BENCH_MODELS=mel BENCH_WRITE_DIR=$PWD/$models/separation cargo bench -p timbre-nn --bench separation
fi
song=$dir/song_$secs.wav
[[ -f $song ]] || (cd bench && "../$venv/bin/python" cover_song.py "../$song" --seconds "$secs")
cargo build --release -p timbre-cli
rm -rf "$dir/library" "$dir/covers"
export TIMBRE_MODELS_DIR=$PWD/$models TIMBRE_DEVICE=cpu
for voice in a b; do
  target/release/timbre --data-dir "$dir/library" models import "$out/models/voice_$voice.pth" \
    --name "Voice ${voice^^}" > /dev/null
done
for voice in a b; do
  echo "bench: covering $secs s with voice ${voice^^}"
  /usr/bin/time -f '{"peak_rss_kb": %M, "wall_s": %e}' -o "$dir/time_$voice.json" \
    target/release/timbre --data-dir "$dir/library" --json cover "$song" --model "Voice ${voice^^}" \
    --separation mel_band_roformer_kj --effects "Clean vocal" --format mp3 --out "$dir/covers" \
    > "$dir/cover_$voice.json"
done
python3 bench/cover_report.py "$dir" "$secs" docs/PERFORMANCE.md \
  --command "make bench-cover$( [[ $secs == 180 ]] || echo " BENCH_SECS=$secs")"
echo "bench: results in docs/PERFORMANCE.md ($dir/cover_a.json, $dir/cover_b.json)"
