#!/usr/bin/env bash
# Set up .venv-dev (scripts/setup_dev.sh, idempotent), run the lint and type gate (scripts/lint.sh), then the
# whole test suite.
# Extra arguments go to pytest, e.g. -m "not slow" (the fast tier, as scripts/test-fast.sh) or a file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_dev.sh
# the suite builds model folders under the temp dir: say so up front when the disk is nearly full, since
# a full disk shows up later as unrelated-looking fixture errors
temp_dir=${TMPDIR:-/tmp}
free_mb=$(df -Pm "$temp_dir" | awk 'NR==2 {print $4}')
if [ "${free_mb:-0}" -lt 4096 ]; then
  echo "scripts/test.sh: only ${free_mb} MB free under $temp_dir; the suite writes up to about 1.5 GB there at once (and .venv-dev is about 5 GB): free some space or point TMPDIR elsewhere" >&2
fi
bash scripts/lint.sh  # ruff and mypy first: a lint or type error fails the run (scripts/lint.sh)
# two workers (pytest-xdist) by default: a test waits on a server, a subprocess or a timeout for much of its time,
# so two at once take the 2-core machine's suite from 23 to 15 minutes (docs/development.md). --dist loadfile: a
# module's tests run on one worker, in order, and its module fixtures are built once; the Ray modules take turns
# (tests/conftest.py). OMNIVOICE_TEST_WORKERS=0 runs everything in one process (-n 0).
workers=${OMNIVOICE_TEST_WORKERS:-2}
OMNIVOICE_NODE_MODULES=${OMNIVOICE_NODE_MODULES:-$PWD/.node-dev} HF_HUB_OFFLINE=1 exec .venv-dev/bin/python -m pytest \
  -n "$workers" --dist loadfile "$@"
