#!/usr/bin/env bash
# A private PulseAudio daemon whose null sink `loop` is a real-time audio loop: what plays on
# the sink comes back on its monitor, the default source. ALSA's `default` device then goes
# through PulseAudio (the pulseaudio package's /etc/alsa/conf.d/99-pulse.conf, libasound2-plugins)
# for a process whose environment points at the daemon. The same daemon as the Rust tests'
# harness (crates/timbre-test-support/src/pulse.rs).
#
#   pulse-loop.sh start DIR   start the daemon in DIR (its runtime folder, made private)
#   pulse-loop.sh stop DIR    stop it
#   pulse-loop.sh env DIR     print the variables that route a client to it (KEY=VALUE lines)
set -euo pipefail

hint="run \`make setup-test\` (scripts/setup.sh --test installs pulseaudio, pulseaudio-utils and libasound2-plugins)"
action="${1:-}"
dir="${2:-}"
[[ -n "$action" && -n "$dir" ]] || { echo "usage: $0 start|stop|env DIR" >&2; exit 2; }

client_env() {
  echo "PULSE_SERVER=unix:$dir/pulse/native"
  echo "XDG_RUNTIME_DIR=$dir"
  echo "HOME=$dir"
  echo "PULSE_COOKIE=$dir/cookie"
}

in_env() {
  local vars=()
  mapfile -t vars < <(client_env)
  env "${vars[@]}" "$@"
}

case "$action" in
  env) client_env ;;
  start)
    for tool in pulseaudio pactl; do
      command -v "$tool" >/dev/null || { echo "pulse-loop.sh: $tool is missing: $hint" >&2; exit 2; }
    done
    [[ -f /usr/share/alsa/pulse-alsa.conf ]] ||
      { echo "pulse-loop.sh: /usr/share/alsa/pulse-alsa.conf is missing, so ALSA cannot reach PulseAudio: $hint" >&2; exit 2; }
    mkdir -p "$dir"
    # pulseaudio refuses a runtime folder that others can read.
    chmod 700 "$dir"
    # A fixed rate: the null sink otherwise switches between 44.1 and 48 kHz with its clients
    # (a device stall for whoever is streaming), and its resampling adds latency no device reports.
    # setsid: the daemon outlives this script, and the caller's Ctrl-C does not reach it.
    mapfile -t vars < <(client_env)
    env "${vars[@]}" setsid pulseaudio -n --daemonize=no --exit-idle-time=-1 \
      --load=module-native-protocol-unix \
      "--load=module-null-sink sink_name=loop rate=48000" \
      --load=module-always-sink </dev/null >"$dir/daemon.log" 2>&1 &
    echo $! >"$dir/daemon.pid"
    for _ in $(seq 150); do
      in_env pactl info >/dev/null 2>&1 && break
      kill -0 "$(cat "$dir/daemon.pid")" 2>/dev/null ||
        { echo "pulse-loop.sh: pulseaudio exited: $(cat "$dir/daemon.log")" >&2; exit 1; }
      sleep 0.1
    done
    in_env pactl info >/dev/null 2>&1 ||
      { echo "pulse-loop.sh: pulseaudio did not answer in 15 s: $(cat "$dir/daemon.log")" >&2; exit 1; }
    in_env pactl set-default-sink loop
    in_env pactl set-default-source loop.monitor
    ;;
  stop)
    if [[ -f "$dir/daemon.pid" ]]; then
      pid="$(cat "$dir/daemon.pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      rm -f "$dir/daemon.pid"
    fi
    ;;
  *) echo "usage: $0 start|stop|env DIR" >&2; exit 2 ;;
esac
