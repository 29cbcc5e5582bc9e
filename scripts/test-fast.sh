#!/usr/bin/env bash
# The fast tier: set up .venv-dev as scripts/test.sh does, then every test not marked slow
# (one tiny fp32 model folder per session; 10.9 min measured on a 2-core VM, BENCHMARKS.md). Arguments go
# to pytest.
set -euo pipefail
exec bash "$(dirname "$0")/test.sh" -m "not slow" "$@"
