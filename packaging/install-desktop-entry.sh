#!/usr/bin/env bash
# The .tar.gz's menu entry, file associations and icons for this user, pointing at this folder
# (run it again after moving the folder; `--remove` takes them away). The .deb installs these
# system-wide itself.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
entry=$data/applications/timbre-studio.desktop
if [[ "${1:-}" == "--remove" ]]; then
  rm -f "$entry" "$data/mime/packages/timbre-studio.xml" \
    "$data"/icons/hicolor/*/apps/timbre-studio.png
else
  mkdir -p "$data/applications" "$data/mime/packages"
  sed "s|^Exec=timbre-studio|Exec=\"$here/bin/timbre-studio\"|" \
    "$here/share/applications/timbre-studio.desktop" > "$entry"
  cp "$here/share/mime/packages/timbre-studio.xml" "$data/mime/packages/"
  for icon in "$here"/share/icons/hicolor/*/apps/timbre-studio.png; do
    size=$(basename "$(dirname "$(dirname "$icon")")")
    mkdir -p "$data/icons/hicolor/$size/apps"
    cp "$icon" "$data/icons/hicolor/$size/apps/"
  done
fi
command -v update-mime-database > /dev/null && update-mime-database "$data/mime" || true
command -v update-desktop-database > /dev/null && update-desktop-database "$data/applications" || true
