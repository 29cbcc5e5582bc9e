#!/usr/bin/env bash
# Set up .venv-dev (scripts/setup_dev.sh, idempotent), run the lint and type gate (scripts/lint.sh), then the
# whole test suite.
# Extra arguments go to pytest, e.g. -m "not slow" (the fast tier, as scripts/test-fast.sh) or a file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_dev.sh
bash scripts/lint.sh  # ruff and mypy first: a lint or type error fails the run (scripts/lint.sh)
OMNIVOICE_NODE_MODULES=${OMNIVOICE_NODE_MODULES:-$PWD/.node-dev} HF_HUB_OFFLINE=1 exec .venv-dev/bin/python -m pytest "$@"
