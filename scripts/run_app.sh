#!/usr/bin/env bash
# Set up .venv with the runtime requirements only (idempotent; no torch: the tests have .venv-dev) and start
# the app.
# Arguments go to app.py, e.g. --model DIR --precision int4 --port 7860.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
exec .venv/bin/python app.py "$@"
