#!/usr/bin/env bash
# Runs a command as one named phase of a run: with TIMBRE_PHASE_LOG set, appends
# "<phase> <seconds> <exit status>" to that file (.ci/run prints them as a table at the end).
set -uo pipefail
phase=$1
shift
started=$(date +%s)
"$@"
status=$?
if [[ -n "${TIMBRE_PHASE_LOG:-}" ]]; then
  echo "$phase $(($(date +%s) - started)) $status" >> "$TIMBRE_PHASE_LOG"
fi
exit $status
