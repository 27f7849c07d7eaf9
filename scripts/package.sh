#!/usr/bin/env bash
# `make package`: the app and the `timbre` CLI as a .deb and as a self-contained .tar.gz, both
# with libtorch's CPU runtime inside (found through RUNPATH $ORIGIN/../lib/timbre-studio) and
# without the CUDA runtime, which the app downloads (`timbre runtime install cuda`). Into
# target/package/. docs/PACKAGING.md explains the layout.
set -euo pipefail
cd "$(dirname "$0")/.."
export LIBTORCH_USE_PYTORCH=1 PATH="$PWD/.venv/bin:$HOME/.cargo/bin:$PATH"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
export TIMBRE_GIT_COMMIT
TIMBRE_GIT_COMMIT=$(git rev-parse --short=12 HEAD)
out=target/package
stage=$out/stage
tree=$stage/tree

[[ -f ui/dist/index.html ]] || npm run build
scripts/timed.sh package-build cargo build --release -p timbre-studio -p timbre-cli \
  --features timbre-studio/custom-protocol

rm -rf "$stage" && mkdir -p "$tree/bin" "$tree/lib/timbre-studio"
for bin in timbre-studio timbre; do
  install -m 0755 "target/release/$bin" "$tree/bin/$bin"
  strip --strip-debug "$tree/bin/$bin"
done

# The libraries the binaries load from the build's libtorch (and what those load from it), and
# nothing of its CUDA backend: that is what `ldd` resolves into the venv.
venv=$(realpath .venv)
mapfile -t torch_libs < <(ldd "$tree/bin/timbre" "$tree/bin/timbre-studio" |
  awk -v venv="$venv" '$2 == "=>" && index($3, venv) == 1 { print $3 }' | sort -u)
for lib in "${torch_libs[@]}"; do
  case "$(basename "$lib")" in
    libtorch_cuda*.so | libc10_cuda.so | libcudnn* | libcublas* | libnccl*)
      echo "package: $lib is part of the CUDA runtime, which the package must not need" >&2
      exit 1
      ;;
  esac
  install -m 0644 "$lib" "$tree/lib/timbre-studio/"
done
# shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
patchelf --set-rpath '$ORIGIN/../lib/timbre-studio' "$tree/bin/timbre" "$tree/bin/timbre-studio"
for lib in "$tree"/lib/timbre-studio/*; do
  # shellcheck disable=SC2016
  patchelf --set-rpath '$ORIGIN' "$lib"
done

share=$tree/share
install -D -m 0644 packaging/timbre-studio.desktop "$share/applications/timbre-studio.desktop"
install -D -m 0644 packaging/timbre-studio-mime.xml "$share/mime/packages/timbre-studio.xml"
for size in 32x32 128x128; do
  install -D -m 0644 "icons/$size.png" "$share/icons/hicolor/$size/apps/timbre-studio.png"
done
install -D -m 0644 icons/icon.png "$share/icons/hicolor/512x512/apps/timbre-studio.png"
install -D -m 0644 README.md "$share/doc/timbre-studio/README.md"

# The .deb: the tree under /usr, its dependencies from the libraries the files need.
deb_root=$stage/deb
mkdir -p "$deb_root/DEBIAN"
cp -a "$tree" "$deb_root/usr"
mkdir -p "$deb_root/usr/share/timbre-studio"
echo deb > "$deb_root/usr/share/timbre-studio/package-form"
shlibs_dir=$stage/shlibs
mkdir -p "$shlibs_dir/debian"
printf 'Source: timbre-studio\n\nPackage: timbre-studio\nArchitecture: amd64\n' > "$shlibs_dir/debian/control"
# Its warnings (libraries without shlibs info: the bundled ones) go to a log, shown if it fails.
if ! shlibs=$(cd "$shlibs_dir" && dpkg-shlibdeps -O --ignore-missing-info \
  -l"$(realpath ../deb/usr/lib/timbre-studio)" \
  ../deb/usr/bin/timbre ../deb/usr/bin/timbre-studio ../deb/usr/lib/timbre-studio/* 2> shlibdeps.log); then
  cat "$shlibs_dir/shlibdeps.log" >&2
  exit 1
fi
depends=$(sed -n 's/^shlibs:Depends=//p' <<< "$shlibs")
[[ -n $depends ]] || { echo "package: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
installed_kb=$(du -sk "$deb_root/usr" | cut -f1)
cat > "$deb_root/DEBIAN/control" <<EOF
Package: timbre-studio
Version: $version
Architecture: amd64
Maintainer: Timbre Studio <hello@timbre.studio>
Installed-Size: $installed_kb
Depends: $depends
Recommends: gstreamer1.0-libav, gstreamer1.0-plugins-good, pulseaudio | pipewire-pulse
Section: sound
Priority: optional
Homepage: https://timbre.studio
Description: Voice studio: record, clean, train and convert RVC voices
 Timbre Studio records and cleans voice samples, trains RVC voice models,
 converts files and live microphone input with them or with community models,
 and makes covers. It runs on the CPU out of the box; on a machine with an
 NVIDIA driver, "Enable GPU" (timbre runtime install cuda) downloads the CUDA
 runtime.
EOF
deb=$out/timbre-studio_${version}_amd64.deb
scripts/timed.sh package-deb dpkg-deb --root-owner-group -Zxz -z6 --build "$deb_root" "$deb"

# The neutral form: the same tree in one folder that runs from wherever it is unpacked.
neutral=timbre-studio-$version-x86_64-linux
mkdir -p "$stage/tar"
cp -a "$tree" "$stage/tar/$neutral"
mkdir -p "$stage/tar/$neutral/share/timbre-studio"
echo tar.gz > "$stage/tar/$neutral/share/timbre-studio/package-form"
install -m 0755 packaging/install-desktop-entry.sh "$stage/tar/$neutral/install-desktop-entry.sh"
tarball=$out/$neutral.tar.gz
scripts/timed.sh package-tar tar -C "$stage/tar" -czf "$tarball" "$neutral"

for file in "$deb" "$tarball"; do
  echo "package: $file $(du -h --apparent-size "$file" | cut -f1) (installed $((installed_kb / 1024)) MiB)"
done
