#!/usr/bin/env bash
# `make package-test`: the packages of `make package` on a clean Debian 12 made by debootstrap
# from Debian's packages (no Rust, Node, Python or venv; nothing shared with the build's /usr).
# Inside it: the .deb installed with apt, `timbre --version`, `timbre doctor --json` (the CPU
# runtime, no CUDA), a conversion with the fixture models, the app under Xvfb to its first page
# (a screenshot in target/package/test/), and the .tar.gz run by an unprivileged user from a
# folder it cannot write. Needs root (chroot). Times each step into target/package/test/times.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "package-test: needs root (debootstrap, chroot)" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
deb=target/package/timbre-studio_${version}_amd64.deb
tarball=target/package/timbre-studio-$version-x86_64-linux.tar.gz
[[ -f $deb && -f $tarball ]] || { echo "package-test: run make package first" >&2; exit 1; }
fixtures=${TIMBRE_FIXTURES:-../shared/fixtures/rvc-parity}
out=target/package/test
root=$out/root
mkdir -p "$out"
: > "$out/times"
step() {
  local name=$1 started
  shift
  started=$(date +%s%N)
  "$@"
  echo "$name $((($(date +%s%N) - started) / 1000000)) ms" >> "$out/times"
}

command -v debootstrap > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
# The mirror this machine's apt uses, not one written down here.
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
mirror=${mirror:-$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list)}

# Every process whose root is the clean root (the app, Xvfb, dbus), then its mounts.
stop_root_processes() {
  local proc real
  real=$(realpath "$root" 2> /dev/null) || return 0
  for proc in /proc/[0-9]*; do
    [[ "$(readlink "$proc/root" 2> /dev/null)" == "$real" ]] && kill "${proc#/proc/}" 2> /dev/null
  done
  return 0
}
cleanup() {
  [[ -n ${root:-} ]] || return 0
  stop_root_processes
  for fs in dev proc sys; do umount -l "$root/$fs" 2> /dev/null || true; done
}
trap cleanup EXIT
# `$root`: a fresh copy of the pristine root `name` (debootstrapped once, kept as a tarball),
# mounted. make_root NAME SUITE MIRROR [SCRIPT] [-- DEBOOTSTRAP OPTIONS...]
make_root() {
  local name=$1 suite=$2 mirror=$3 script=${4:-}
  local pristine=$out/$name-minbase.tar options=()
  shift $(($# < 4 ? $# : 4))
  [[ ${1:-} == -- ]] && shift && options=("$@")
  if [[ ! -f $pristine ]]; then
    rm -rf "$out/pristine"
    step "debootstrap-$name" debootstrap --variant=minbase "${options[@]}" "$suite" "$out/pristine" \
      "$mirror" ${script:+"$script"}
    tar -C "$out/pristine" -cf "$pristine" .
    rm -rf "$out/pristine"
  fi
  cleanup
  root=$out/$name-root
  rm -rf "$root" && mkdir -p "$root" && tar -C "$root" -xf "$pristine"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t sysfs sys "$root/sys"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
}
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
as_tester() { chroot --userspec=tester:tester "$root" env -i PATH=/usr/bin:/bin HOME=/home/tester "$@"; }
# The app ($1, as user $2) to its first page under Xvfb; the framebuffer (XWD) becomes the
# screenshot $3. Records the seconds to the first window as step $4.
first_page() {
  local app=$1 user=$2 png=$3 name=$4 first_window
  mkdir -p "$root/tmp/fb"
  in_root sh -c 'Xvfb :7 -screen 0 1280x800x24 -fbdir /tmp/fb > /tmp/xvfb.log 2>&1 &'
  chroot --userspec="$user:$user" "$root" env -i PATH=/usr/bin:/bin HOME="$(in_root sh -c "echo ~$user")" \
    DISPLAY=:7 WEBKIT_DISABLE_DMABUF_RENDERER=1 NO_AT_BRIDGE=1 \
    sh -c "dbus-launch --exit-with-session $app > /tmp/app-$user.log 2>&1 &"
  first_window=$(python3 scripts/xwd_to_png.py --wait 120 "$root/tmp/fb/Xvfb_screen0")
  echo "$name $first_window s" >> "$out/times"
  sleep 5
  python3 scripts/xwd_to_png.py "$root/tmp/fb/Xvfb_screen0" "$png"
  stop_root_processes
}

make_root bookworm bookworm "$mirror"
cp "$deb" "$root/tmp/timbre-studio.deb"
in_root apt-get update -qq
# The test's own tools first, so that the install's time is the package's with its dependencies.
# (shared-mime-info, desktop-file-utils and xdg-utils, which a desktop has, to see the package's
# file associations registered).
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  xvfb xauth dbus-x11 shared-mime-info desktop-file-utils xdg-utils
step install-deb in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  /tmp/timbre-studio.deb
# No build path anywhere in what was installed, and every library resolved inside the root.
for elf in "$root"/usr/bin/timbre "$root"/usr/bin/timbre-studio "$root"/usr/lib/timbre-studio/*; do
  if readelf -d "$elf" | grep -F -e "$PWD" -e ".venv" -e "/work/"; then
    echo "package-test: $elf names a path into the build" >&2; exit 1
  fi
done
for bin in timbre timbre-studio; do
  resolved=$(in_root ldd "/usr/bin/$bin")
  if grep -E "not found|\.venv|/work/" <<< "$resolved"; then
    echo "package-test: $bin does not resolve in the clean root:" >&2; echo "$resolved" >&2; exit 1
  fi
  # The package's own libtorch (RUNPATH $ORIGIN: ldd shows /usr/bin/../lib/…), never CUDA's.
  if ! grep -Eq "=> /usr/(bin/\.\./)?lib/timbre-studio/libtorch_cpu\.so" <<< "$resolved" ||
    grep -q "libtorch_cuda" <<< "$resolved"; then
    echo "package-test: $bin does not load the package's CPU libtorch:" >&2; echo "$resolved" >&2; exit 1
  fi
done

# "Open with": the voice type known to the MIME database, the app the default for it and for WAV.
[[ -f $root/usr/share/mime/application/x-rvc-voice.xml ]]
for type in application/x-rvc-voice audio/x-wav application/zip; do
  default=$(in_root xdg-mime query default "$type")
  [[ $default == timbre-studio.desktop ]] || {
    echo "package-test: $type opens with '$default', not Timbre Studio" >&2; exit 1
  }
done

step version in_root timbre --version | tee "$out/version"
grep -q "^timbre $version (" "$out/version"
step doctor in_root timbre --data-dir /tmp/library doctor --json > "$out/doctor.json"
python3 - "$out/doctor.json" <<'EOF'
import json, sys
torch = json.load(open(sys.argv[1]))["libtorch"]
assert torch["cuda_runtime"] is None and not torch["cuda"], torch
assert torch["version"].startswith("2."), torch
print("doctor: libtorch", torch["version"], "on the CPU:", torch["cuda_runtime_problem"])
EOF

# A conversion with the fixture models, on the CPU, by `timbre` ($2) run as user $1 (`step` $3).
convert_fixture() {
  local user=$1 timbre=$2 name=$3
  mkdir -p "$root/tmp/models" "$root/tmp/fixtures"
  cp "$fixtures/hubert_tiny/hubert_fairseq.pt" "$root/tmp/models/hubert_base.pt"
  cp "$fixtures/rmvpe_tiny/rmvpe.pt" "$root/tmp/models/rmvpe.pt"
  cp "$fixtures/synth_v1_f0_40k/model.pth" "$root/tmp/fixtures/voice.pth"
  python3 - "$root/tmp/fixtures/tone.wav" <<'EOF'
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 220 * i / 16000))) for i in range(32000)))
EOF
  chmod -R a+rX "$root/tmp/models" "$root/tmp/fixtures"
  timbre_cpu() {
    chroot --userspec="$user:$user" "$root" env -i PATH=/usr/bin:/bin HOME=/tmp \
      TIMBRE_MODELS_DIR=/tmp/models TIMBRE_DEVICE=cpu "$timbre" --data-dir "/tmp/library-$name" "$@"
  }
  timbre_cpu models import /tmp/fixtures/voice.pth --name fixture > /dev/null
  step "$name" timbre_cpu --json convert --model fixture --out "/tmp/out-$name" /tmp/fixtures/tone.wav \
    > "$out/$name.json"
  ls "$root/tmp/out-$name"/*.wav > /dev/null
}
convert_fixture root timbre convert

# The app to its first page under Xvfb, on a library of its own in the XDG data folder.
in_root useradd -m tester 2> /dev/null || true
first_page timbre-studio tester "$out/first-page.png" app-first-window
# The app kept its library in the XDG data folder, and removing the package leaves it.
library=$root/home/tester/.local/share/timbre-studio/library.sqlite3
[[ -f $library ]] || { echo "package-test: the app made no library at $library" >&2; exit 1; }
step remove-deb in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq timbre-studio
[[ ! -e $root/usr/bin/timbre && -f $library ]]

# The neutral form: unpacked read-only, run by a user who cannot write there.
unpack_neutral() {
  mkdir -p "$root/opt"
  step "unpack-tar-$1" tar -C "$root/opt" -xzf "$tarball"
  chmod -R a-w "$root/opt/timbre-studio-$version-x86_64-linux"
}
neutral=/opt/timbre-studio-$version-x86_64-linux/bin
unpack_neutral bookworm
as_tester "$neutral/timbre" --version | grep -q "^timbre $version ("
as_tester "$neutral/timbre" doctor --json > "$out/doctor-neutral.json"

# The neutral form on Ubuntu 24.04, with the libraries it needs from Ubuntu's archive. Debian
# ships no Ubuntu keyring, so the root's Release files go unchecked: this is a test root.
make_root noble noble http://archive.ubuntu.com/ubuntu /usr/share/debootstrap/scripts/gutsy \
  -- --no-check-gpg --components=main,universe
echo "deb [trusted=yes] http://archive.ubuntu.com/ubuntu noble main universe" > "$root/etc/apt/sources.list"
in_root apt-get update -qq
step install-noble-libraries in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends libwebkit2gtk-4.1-0 libasound2t64 libpulse0 xvfb xauth dbus-x11
in_root useradd -m tester 2> /dev/null || true
unpack_neutral noble
for bin in timbre timbre-studio; do
  resolved=$(in_root ldd "$neutral/$bin")
  if grep -E "not found" <<< "$resolved"; then
    echo "package-test: $bin does not resolve on Ubuntu 24.04:" >&2; echo "$resolved" >&2; exit 1
  fi
done
as_tester "$neutral/timbre" --version | grep -q "^timbre $version ("
as_tester "$neutral/timbre" doctor --json > "$out/doctor-noble.json"
convert_fixture tester "$neutral/timbre" convert-noble
first_page "$neutral/timbre-studio" tester "$out/first-page-noble.png" app-first-window-noble
cat "$out/times"
echo "package-test: passed; the first pages are $out/first-page.png and $out/first-page-noble.png"
