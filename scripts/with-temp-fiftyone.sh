#!/usr/bin/env bash
# Runs a command against a fresh, private FiftyOne database (the embedded
# MongoDB) that is removed afterwards, with this repository as plugins dir.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/iaa-fiftyone.XXXXXX")
cleanup() {
    # stop the mongod this run started, then remove its files
    pkill -f -- "--dbpath $tmp/db" 2>/dev/null || true
    for _ in $(seq 50); do
        pgrep -f -- "--dbpath $tmp/db" >/dev/null 2>&1 || break
        sleep 0.2
    done
    rm -rf "$tmp" 2>/dev/null || true
}
trap cleanup EXIT
export FIFTYONE_DATABASE_DIR="$tmp/db"
export FIFTYONE_DEFAULT_DATASET_DIR="$tmp/datasets"
export FIFTYONE_DO_NOT_TRACK=true
export FIFTYONE_PLUGINS_DIR="$repo"
export FIFTYONE_DATABASE_VALIDATION=false
cd "$repo"
"$@"
