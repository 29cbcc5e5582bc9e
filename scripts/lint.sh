#!/usr/bin/env bash
# The lint and type gate: ruff (the rules of [tool.ruff] in pyproject.toml) on the checkout, then mypy
# ([tool.mypy]: the package omnivoice_demo). scripts/test.sh runs it before pytest, so CI (.ci/run) fails on a
# lint or a type error. Arguments: the paths to check instead (both tools), e.g. one file.
# PYTHON: the interpreter with ruff and mypy (default .venv-dev's; requirements-dev.txt pins both).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv-dev/bin/python}
"$PYTHON" -m ruff check --config pyproject.toml --no-fix --quiet "${@:-.}"
"$PYTHON" -m mypy --config-file pyproject.toml "$@"
