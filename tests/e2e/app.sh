#!/usr/bin/env bash
# What tauri-driver starts for each spec: the app binary (E2E_APP), with a models folder of its
# own when the spec's session asks for one (`--models-dir=DIR` among the arguments, set by
# wdio.conf.mjs's beforeSession), and with variables of its own (`--env=KEY=VALUE`: the live
# spec's PulseAudio loop), since the environment is fixed when tauri-driver starts.
args=()
for arg in "$@"; do
  case "$arg" in
    --models-dir=*) export TIMBRE_MODELS_DIR="${arg#--models-dir=}"; mkdir -p "$TIMBRE_MODELS_DIR" ;;
    --env=*=*) pair="${arg#--env=}"; export "${pair%%=*}=${pair#*=}" ;;
    *) args+=("$arg") ;;
  esac
done
exec "${E2E_APP:?E2E_APP is not set}" "${args[@]}"
