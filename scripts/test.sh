#!/usr/bin/env bash
# Set up .venv (idempotent) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_dev.sh
HF_HUB_OFFLINE=1 .venv/bin/python -m pytest "$@"
