#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with small valid inputs for each fuzz target: the RoFormer
# configs of the fixtures (../shared/fixtures, or FIXTURES_DIR), torch.save files and a faiss
# index written in their real formats by the venv's Python (small, so the fuzzer mutates fast),
# and audio generated with ffmpeg. Corpora are not committed; rerunning adds what is missing.
set -euo pipefail
cd "$(dirname "$0")"
fixtures=${FIXTURES_DIR:-../../shared/fixtures}
python=${PYTHON:-../.venv/bin/python}
for target in torch_file faiss_index roformer_config audio_decode wav_header voice_zip; do
    mkdir -p "corpus/$target"
done

for config in "$fixtures"/separation/*/config.yaml; do
    [ -e "$config" ] && install -m 644 "$config" "corpus/roformer_config/$(basename "$(dirname "$config")").yaml"
done

if [ -x "$python" ]; then
    "$python" - corpus <<'PY'
import argparse, collections, struct, sys
from pathlib import Path

import torch

out = Path(sys.argv[1])
torch.manual_seed(0)
rvc = {
    "weight": collections.OrderedDict(
        (name, torch.randn(shape).half())
        for name, shape in [("emb_g.weight", (1, 4)), ("enc_p.emb_phone.weight", (4, 8)),
                            ("enc_p.emb_phone.bias", (4,)), ("dec.conv_post.weight", (1, 2, 7))]
    ),
    "config": [9, 32, 4, 4, 8, 2, 1, 3, 0, "1", [3], [[1, 3, 5]], [2], 4, [4], 1, 4, 40000],
    "info": "seed", "sr": "40k", "f0": 1, "version": "v2",
}
torch.save(rvc, out / "torch_file/rvc.pth")
torch.save(rvc, out / "torch_file/rvc_legacy.pth", _use_new_zipfile_serialization=False)
shared = torch.arange(12, dtype=torch.float32)
torch.save({"a": shared[:6].view(2, 3), "b": shared[6:], "t": shared.t() if shared.dim() == 2 else shared[::2],
            "i": torch.tensor([1, 2], dtype=torch.int64), "bf": torch.ones(2, dtype=torch.bfloat16)},
           out / "torch_file/views.pth")
torch.save({"model": {"feature_extractor.conv.weight": torch.zeros(2, 1, 3)},
            "args": argparse.Namespace(layers=2, name="hubert"), "cfg": {"task": {"rate": 16000}}},
           out / "torch_file/fairseq_like.pt")
torch.save(torch.zeros(3), out / "torch_file/bare_tensor_legacy.pt", _use_new_zipfile_serialization=False)

# A faiss IVF-Flat index as faiss.write_index lays it out (see crates/timbre-nn/src/index/format.rs).
dim, nlist = 2, 2
def header(d, n):
    return struct.pack("<iqqqBi", d, n, 1 << 20, 1 << 20, 1, 1)
lists = [[(0.0, 1.0), (0.5, 0.5)], [(3.0, 2.0)]]
index = b"IwFl" + header(dim, 3) + struct.pack("<QQ", nlist, 1)
index += b"IxF2" + header(dim, nlist) + struct.pack("<Q", nlist * dim) + struct.pack("<4f", 0, 1, 3, 2)
index += struct.pack("<BQ", 0, 0)
index += b"ilar" + struct.pack("<QQ", nlist, 4 * dim) + b"full" + struct.pack("<Q", nlist)
index += struct.pack("<2Q", *(len(l) for l in lists))
next_id = 0
for vectors in lists:
    index += b"".join(struct.pack("<2f", *v) for v in vectors)
    index += b"".join(struct.pack("<q", next_id + i) for i in range(len(vectors)))
    next_id += len(vectors)
(out / "faiss_index/tiny.index").write_bytes(index)

# A community-style voice archive: the model and its index in a folder, junk, a link entry.
import zipfile
with zipfile.ZipFile(out / "voice_zip/voice.zip", "w", zipfile.ZIP_DEFLATED) as archive:
    archive.write(out / "torch_file/rvc.pth", "Voice/voice.pth")
    archive.writestr("Voice/added_IVF2_Flat_nprobe_1_voice_v2.index", index)
    archive.writestr("Voice/readme.txt", "seed voice")
    link = zipfile.ZipInfo("Voice/link.pth")
    link.external_attr = 0o120777 << 16
    archive.writestr(link, "/etc/passwd")
PY
else
    echo "seed.sh: no Python at $python (set PYTHON): torch_file, faiss_index and voice_zip start empty" >&2
fi

# Audio: 0.1 s tones, the first byte of each audio_decode seed picks the extension hint
# (0 wav, 1 flac, 2 mp3, 3 ogg), as fuzz_targets/audio_decode.rs reads it.
if command -v ffmpeg > /dev/null; then
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    tone() { ffmpeg -loglevel error -y -f lavfi -i "sine=frequency=440:sample_rate=$1:duration=0.1" -ac "$2" "${@:3}"; }
    tone 16000 1 -c:a pcm_s16le "$scratch/s16.wav"
    tone 44100 2 -c:a pcm_s24le "$scratch/s24.wav"
    tone 48000 1 -c:a pcm_f32le "$scratch/f32.wav"
    tone 44100 2 -c:a flac "$scratch/tone.flac"
    tone 44100 1 -c:a libmp3lame -b:a 32k "$scratch/tone.mp3"
    tone 44100 2 -c:a libvorbis "$scratch/tone.ogg"
    with_hint() { { printf "\\x$1"; cat "$2"; } > "corpus/audio_decode/$(basename "$2")"; }
    for wav in "$scratch"/*.wav; do with_hint 00 "$wav"; done
    with_hint 01 "$scratch/tone.flac"
    with_hint 02 "$scratch/tone.mp3"
    with_hint 03 "$scratch/tone.ogg"
    # wav_header reads the 16 bytes of `fmt ` and the data size, then the samples.
    for wav in "$scratch"/*.wav; do
        python3 - "$wav" "corpus/wav_header/$(basename "$wav")" <<'PY' 2> /dev/null || true
import sys
data = open(sys.argv[1], "rb").read()
fmt = data.index(b"fmt ")
body = data.index(b"data")
open(sys.argv[2], "wb").write(data[fmt + 8:fmt + 24] + data[body + 4:])
PY
    done
else
    echo "seed.sh: no ffmpeg: audio_decode and wav_header start empty" >&2
fi
# WAV layouts symphonia panicked on before the header check knew them (tests/bad_audio.rs makes
# the same files): a `fmt ` after 100 JUNK chunks, a second `fmt `, an extensible speaker mask
# with its top bit set. As audio_decode inputs: a 0 (the wav hint), then the file.
if command -v python3 > /dev/null; then
    python3 - corpus/audio_decode <<'PY'
import struct, sys
from pathlib import Path

def riff(chunks):
    body = b"WAVE" + b"".join(
        tag + struct.pack("<I", len(data)) + data + b"\0" * (len(data) % 2) for tag, data in chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body

def pcm(channels, tag=1):
    return struct.pack("<HHIIHH", tag, channels, 16000, 32000 * channels, (2 * channels) & 0xFFFF, 16)

pcm_guid = bytes([1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71])
extensible = pcm(2, 0xFFFE) + struct.pack("<HHI", 22, 16, 0x80000000) + pcm_guid
data = (b"data", bytes(8))
files = {
    "junk-then-fmt.wav": [(b"JUNK", bytes(4))] * 100 + [(b"fmt ", pcm(40000)), data],
    "two-fmt.wav": [(b"fmt ", pcm(1)), (b"fmt ", pcm(40000)), data],
    "speaker-mask.wav": [(b"fmt ", extensible), data],
}
for name, chunks in files.items():
    (Path(sys.argv[1]) / name).write_bytes(b"\0" + riff(chunks))
PY
else
    echo "seed.sh: no python3: audio_decode starts without the crafted WAVs" >&2
fi
echo "seeded: $(for d in corpus/*/; do printf '%s %s  ' "$(basename "$d")" "$(ls "$d" | wc -l)"; done)"
