#!/usr/bin/env bash
# The fast tier: set up .venv-dev as scripts/test.sh does, then every test not marked slow
# (one tiny fp32 model folder per session; 7.5 min measured on a 2-core VM, 2026-12-05, BENCHMARKS.md). Arguments go
# to pytest.
set -euo pipefail
exec bash "$(dirname "$0")/test.sh" -m "not slow" "$@"
