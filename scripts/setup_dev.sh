#!/usr/bin/env bash
# Create or update .venv-dev with everything the convert pipeline and the tests need; runs no tests.
# Its own environment: the app's .venv (scripts/run_app.sh) keeps the runtime only (no torch), and the
# two scripts never run pip on one environment at once.
#   requirements-dev.txt (runtime + torch CPU, omnivoice, Olive, pytest, Playwright), the torchaudio
#   fix, this checkout installed in editable form (the console scripts omnivoice, omnivoice-studio
#   and omnivoice-convert run the files of the checkout), and Debian's Chromium for the browser test.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv-dev
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -r requirements-dev.txt
"$VENV/bin/python" scripts/fix_torchaudio.py
# the dependencies came from requirements-dev.txt (pinned); this adds the project and its commands
# setuptools warns on every editable install that a folder named like the package may be imported instead;
# this checkout is that folder, so the warning (not an error) is silenced
PYTHONWARNINGS="ignore:Editable installation" "$VENV/bin/python" -m pip install -q --no-deps -e .

# --- chromium for tests/test_app_browser.py --------------------------------------------------
# Playwright (requirements-dev.txt) drives the system's Chromium by its executable path: no
# `playwright install` download. Installing Chromium needs apt-get and root (or passwordless
# sudo); where that is missing the browser test is skipped and says why.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    if $SUDO true 2>/dev/null; then
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
        && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
        || echo "setup_dev.sh: could not install chromium; the browser test will be skipped" >&2
    else
      echo "setup_dev.sh: installing chromium needs root; run: sudo apt-get install chromium" >&2
    fi
  else
    echo "setup_dev.sh: no apt-get; install Chromium or Chrome to run the browser test" >&2
  fi
fi

# --- PostgreSQL for tests/test_voice_store.py and tests/test_voice_store_serve.py ------------------
# The voice store's tests start a real server (initdb into a temporary folder, pg_ctl on a free port): Debian's
# postgresql package gives the binaries. Without them (no apt-get, no root) those tests are skipped and say why.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    if $SUDO true 2>/dev/null; then
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
        && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql \
        || echo "setup_dev.sh: could not install postgresql; the voice store's database tests will be skipped" >&2
    else
      echo "setup_dev.sh: installing postgresql needs root; run: sudo apt-get install postgresql" >&2
    fi
  else
    echo "setup_dev.sh: no apt-get; install PostgreSQL's server to run the voice store's database tests" >&2
  fi
fi

# --- the openai npm package for tests/test_http_api.py's Node example -------------------------
# OpenAI's own Node example runs against the test server where node and npm are present; the
# package goes into .node-dev/ (scripts/test.sh points OMNIVOICE_NODE_MODULES there). Without
# npm, or when the registry cannot be reached, that one test is skipped and says why.
if command -v npm >/dev/null 2>&1 && [ ! -f .node-dev/node_modules/openai/package.json ]; then
  npm install --silent --no-audit --no-fund --prefix .node-dev openai@6.49.0 >/dev/null \
    || echo "setup_dev.sh: could not install the openai npm package; the Node example test will be skipped" >&2
fi
