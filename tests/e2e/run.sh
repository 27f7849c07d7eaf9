#!/usr/bin/env bash
# End-to-end GUI tests of Timbre Studio: the real app binary in real WebKitGTK, driven by
# WebdriverIO through tauri-driver, under Xvfb and a private D-Bus session.
#
# Needs: the app built with its UI (`make app`, or `make build-test`, which `make test-e2e`
# does first), tauri-driver, WebKitWebDriver, xvfb-run, dbus-run-session,
# python3, Node 20, pulseaudio (scripts/setup.sh --test installs them).
#
# Each run gets a temp dir with a fresh library (TIMBRE_DATA_DIR), test audio, and a fake
# microphone: a HOME whose ~/.asoundrc turns ALSA's default capture device into a reader of a
# FIFO that fake_mic.py fills with a 440 Hz sine in real time; and a private PulseAudio daemon
# with a null sink (pulse-loop.sh), the live spec's real-time audio loop. Extra arguments go to
# `wdio run` (e.g. `--spec tests/e2e/specs/record.e2e.mjs`).
#
# Ends with one line "N passed, N failed"; exits non-zero when any test failed.
#
# Knobs: E2E_APP (app binary), RVC_PARITY_DIR (the fixtures conversion runs on, default
# ../shared/fixtures/rvc-parity beside the repository), E2E_KEEP_TMP=1 (keep the temp dir: library, audio, .asoundrc),
# E2E_SCREENSHOT_DIR (default tests/e2e/logs), E2E_TIMEOUT (seconds for the whole wdio run,
# default 900), TAURI_DRIVER, E2E_NATIVE_DRIVER. Logs, results.jsonl and screenshots (one of
# the Library, and one per failed test) go to tests/e2e/logs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

app="${E2E_APP:-$root/target/debug/timbre-studio}"
[[ -x "$app" ]] || { echo "run.sh: $app is missing: build it with \`make build-test\` or \`make app\`" >&2; exit 2; }
for tool in xvfb-run dbus-run-session python3 node npm; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (scripts/setup.sh --test installs it)" >&2; exit 2; }
done
# Resolve tauri-driver before HOME changes below.
tauri_driver="${TAURI_DRIVER:-$(command -v tauri-driver || echo "$HOME/.cargo/bin/tauri-driver")}"
[[ -x "$tauri_driver" ]] || { echo "run.sh: tauri-driver is missing: cargo install --locked tauri-driver --version 2.1.0" >&2; exit 2; }
native_driver="${E2E_NATIVE_DRIVER:-$(command -v WebKitWebDriver || echo /usr/bin/WebKitWebDriver)}"
[[ -x "$native_driver" ]] || { echo "run.sh: WebKitWebDriver is missing (Debian package webkit2gtk-driver)" >&2; exit 2; }

# npm packages of this folder (its own package, apart from the root one): install when
# missing or when the lockfile changed. --ignore-scripts: nothing may download a browser or
# driver (geckodriver/edgedriver only do when asked, but stay safe).
stamp="$here/node_modules/.e2e-lock-hash"
lock_hash="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
if [[ ! -d "$here/node_modules" || "$(cat "$stamp" 2>/dev/null)" != "$lock_hash" ]]; then
  echo "run.sh: installing the e2e npm packages"
  npm ci --prefix "$here" --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > "$stamp"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/timbre-e2e.XXXXXX")"
logs="$here/logs"
rm -rf "$logs"
mkdir -p "$logs" "$tmp/home" "$tmp/library"
mic_pid=""
server_pid=""
pulse_dir=""
cleanup() {
  [[ -z "$pulse_dir" ]] || "$here/pulse-loop.sh" stop "$pulse_dir" || true
  for pid in $mic_pid $server_pid; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  if [[ "${E2E_KEEP_TMP:-0}" == 1 ]]; then echo "run.sh: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# Test audio: 2.000 s of a 440 Hz sine at amplitude 0.5, 16-bit mono 44.1 kHz.
audio="$tmp/sine-440.wav"
python3 - "$audio" <<'EOF'
import math, struct, sys, wave
rate, secs, freq, amp = 44100, 2.0, 440.0, 0.5
n = int(rate * secs)
frames = b"".join(struct.pack("<h", int(round(amp * 32767 * math.sin(2 * math.pi * freq * i / rate)))) for i in range(n))
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(rate)
    w.writeframes(frames)
EOF

# The fake microphone: the configuration of timbre_audio::record::fake_alsa_config (a `plug`
# default device over a `file` PCM that reads `infile`, declared FLOAT_LE 48 kHz stereo, the
# format cpal opens it with, so nothing is converted: conversion makes the file plugin drop
# frames). One change: the file plugin over `null` reads as fast as it is asked, so a plain
# file makes a 2.5 s recording hold minutes of audio; the infile is a FIFO that fake_mic.py
# fills in real time instead.
mic_rate=48000
mic_channels=2
fifo="$tmp/mic.fifo"
cat > "$tmp/home/.asoundrc" <<EOF
pcm.!default {
    type plug
    slave {
        pcm "timbre_fake_capture"
        format FLOAT_LE
        rate $mic_rate
        channels $mic_channels
    }
}
pcm.timbre_fake_capture {
    type file
    slave.pcm "null"
    file "/dev/null"
    infile "$fifo"
    format "raw"
}
EOF
python3 "$here/fake_mic.py" "$fifo" --rate "$mic_rate" --channels "$mic_channels" --format f32 \
  --freq 440 --amplitude 0.5 2>"$logs/fake_mic.log" &
mic_pid=$!
for _ in $(seq 50); do [[ -p "$fifo" ]] && break; sleep 0.1; done
[[ -p "$fifo" ]] || { echo "run.sh: the fake microphone did not start (see $logs/fake_mic.log)" >&2; exit 2; }

# The models folder (TIMBRE_MODELS_DIR): the tiny random-weight HuBERT and RMVPE of the parity
# fixtures under their real names, so conversion runs in seconds. The voice models of the same
# fixtures are imported by convert.e2e.mjs.
parity="$(cd "${RVC_PARITY_DIR:-$root/../shared/fixtures/rvc-parity}" 2>/dev/null && pwd)" ||
  { echo "run.sh: the RVC parity fixtures are missing (set RVC_PARITY_DIR)" >&2; exit 2; }
mkdir -p "$tmp/models"
ln -s "$parity/hubert_tiny/hubert_fairseq.pt" "$tmp/models/hubert_base.pt"
ln -s "$parity/rmvpe_tiny/rmvpe.pt" "$tmp/models/rmvpe.pt"
export TIMBRE_MODELS_DIR="$tmp/models" E2E_PARITY_DIR="$parity"
# The checkpoint judge's speaker encoder (train.e2e.mjs scores its checkpoints): Resemblyzer's
# weights from the test virtual environment (requirements-reference.txt), under the name the
# judge looks for first.
encoder=$(ls "$root"/.venv/lib/python3*/site-packages/resemblyzer/pretrained.pt 2>/dev/null | head -1)
[[ -f "$encoder" ]] || { echo "e2e: no resemblyzer/pretrained.pt in .venv (run make test)" >&2; exit 1; }
ln -s "$encoder" "$tmp/models/speaker-encoder.pt"

# Training (train.e2e.mjs) trains a tiny model: RVC's v1 40 kHz generator shrunk to a few
# channels and a 3-frame slice (tests/support/mod.rs TINY_GENERATOR_40K), its discriminator 16
# times narrower: the whole path of a run through the app in seconds rather than minutes.
cat > "$tmp/tiny-model-40k.json" <<'EOF_TINY'
{"spec_channels": 1025, "segment_size": 3, "inter_channels": 8, "hidden_channels": 8,
 "filter_channels": 16, "n_heads": 2, "n_layers": 1, "kernel_size": 3, "p_dropout": 0,
 "resblock": "1", "resblock_kernel_sizes": [3], "resblock_dilation_sizes": [[1, 3, 5]],
 "upsample_rates": [10, 10, 2, 2], "upsample_initial_channel": 32,
 "upsample_kernel_sizes": [16, 16, 4, 4], "spk_embed_dim": 1, "gin_channels": 8, "sr": 40000,
 "discriminator_divisor": 16}
EOF_TINY
export TIMBRE_TRAIN_MODEL_CONFIG="$tmp/tiny-model-40k.json"

# Downloads (first-run.e2e.mjs): an HTTP server on 127.0.0.1 serving the same tiny HuBERT and
# RMVPE, and a test catalogue (TIMBRE_ASSET_CATALOG) that is the shipped one with these two
# entries' URLs, sizes and SHA-256 made the fixtures', served from TIMBRE_DOWNLOAD_ENDPOINT.
# Every spec sees this catalogue: the linked fixtures above are the right size for it. The
# first-run spec starts the app on an empty models folder (app.sh, wdio.conf.mjs).
mkdir -p "$tmp/served/e2e"
ln -s "$parity/hubert_tiny/hubert_fairseq.pt" "$tmp/served/e2e/hubert_base.pt"
ln -s "$parity/rmvpe_tiny/rmvpe.pt" "$tmp/served/e2e/rmvpe.pt"
python3 - "$root/models/models.json" "$tmp/served/e2e" "$tmp/catalog.json" <<'EOF_CATALOG'
import hashlib, json, os, sys
shipped, served, out = sys.argv[1:]
catalog = json.load(open(shipped))
for asset in catalog["models"]:
    if asset["path"] in ("hubert_base.pt", "rmvpe.pt"):
        data = open(os.path.join(served, asset["path"]), "rb").read()
        asset.update(urls=["e2e/" + asset["path"]], size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
json.dump(catalog, open(out, "w"), indent=1)
EOF_CATALOG
python3 - "$tmp/served" "$tmp/asset-server.port" 2>"$logs/asset-server.log" <<'EOF_SERVER' &
import functools, http.server, os, sys
served, port_file = sys.argv[1:]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=served)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
EOF_SERVER
server_pid=$!
for _ in $(seq 50); do [[ -s "$tmp/asset-server.port" ]] && break; sleep 0.1; done
[[ -s "$tmp/asset-server.port" ]] || { echo "run.sh: the asset server did not start (see $logs/asset-server.log)" >&2; exit 2; }
export TIMBRE_ASSET_CATALOG="$tmp/catalog.json" TIMBRE_DOWNLOAD_ENDPOINT="http://127.0.0.1:$(cat "$tmp/asset-server.port")"
# The start's update check asks this server, not the project's feed: it has no feed (a 404, which
# the app keeps quiet about), so no spec sees an update notice.
export TIMBRE_UPDATE_FEED="$TIMBRE_DOWNLOAD_ENDPOINT/updates/stable.json"
export NO_PROXY="127.0.0.1${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1${no_proxy:+,$no_proxy}"

# The live spec's audio loop: a private PulseAudio daemon whose null sink's monitor is the
# default source (pulse-loop.sh). Only the live spec's app is pointed at it (wdio.conf.mjs,
# app.sh); the other specs keep the fake microphone above.
pulse_dir="$tmp/pulse"
"$here/pulse-loop.sh" start "$pulse_dir" || exit 2

export TIMBRE_DATA_DIR="$tmp/library"
export E2E_PULSE_DIR="$pulse_dir"
export E2E_APP="$app" E2E_APP_LAUNCHER="$here/app.sh" E2E_AUDIO="$audio" E2E_DATA_DIR="$TIMBRE_DATA_DIR" E2E_TMP="$tmp"
export E2E_LOG_DIR="$logs" E2E_RESULTS="$logs/results.jsonl" E2E_SCREENSHOT_DIR="${E2E_SCREENSHOT_DIR:-$logs}"
export TAURI_DRIVER="$tauri_driver" E2E_NATIVE_DRIVER="$native_driver"
export WEBKIT_DISABLE_DMABUF_RENDERER=1 NO_AT_BRIDGE=1
# Web Audio output. There is no sound server, and GStreamer's openalsink (plugins-bad, a
# Recommends of WebKitGTK) would open ALSA's default device, which is the fake capture
# device above: OpenAL fails on it and the web process hangs in AudioContext. Keep
# openalsink out (GStreamer then falls back to a clocked fake sink, as on machines without
# plugins-bad) and, should OpenAL still be used, give it its real-time null backend.
export GST_PLUGIN_FEATURE_RANK="openalsink:NONE${GST_PLUGIN_FEATURE_RANK:+,$GST_PLUGIN_FEATURE_RANK}"
export ALSOFT_DRIVERS=null
unset PULSE_SERVER PIPEWIRE_REMOTE
: > "$E2E_RESULTS"

started=$(date +%s)
set +e
HOME="$tmp/home" timeout --kill-after=30 "${E2E_TIMEOUT:-900}" \
  xvfb-run -a -s "-screen 0 1280x900x24" \
  dbus-run-session -- \
  "$here/node_modules/.bin/wdio" run "$here/wdio.conf.mjs" "$@"
rc=$?
set -e

passed=$(grep -c '"passed":true' "$E2E_RESULTS" || true)
failed=$(grep -c '"passed":false' "$E2E_RESULTS" || true)
skipped=$(grep -c '"skipped":true' "$E2E_RESULTS" || true)
if ((rc != 0 && failed == 0)); then
  echo "run.sh: wdio exited with $rc before reporting a failed test (see $logs)" >&2
  failed=1
fi
if ((passed + failed == 0)); then
  echo "run.sh: no test ran" >&2
  failed=1
fi
echo "e2e: $(($(date +%s) - started)) s; logs and screenshots in $logs"
((skipped == 0)) || echo "$skipped skipped (see results.jsonl)"
# Last, so that the tail of a CI log names what failed and why.
grep '"passed":false' "$E2E_RESULTS" | cut -c1-700 | sed 's/^/FAILED: /' || true
echo "$passed passed, $failed failed"
((rc == 0 && failed == 0))
