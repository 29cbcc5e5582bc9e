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

# --- Debian packages the tests use, installed when missing ------------------------------------
# apt_install PACKAGE WHAT: installs PACKAGE with apt-get (as root, or with passwordless sudo); where that is not
# possible it says which tests will be skipped (WHAT) and the set-up goes on.
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup_dev.sh: no apt-get; install $1 to run $2" >&2
    return 0
  fi
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
  if $SUDO true 2>/dev/null; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
      && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" \
      || echo "setup_dev.sh: could not install $1; $2 will be skipped" >&2
  else
    echo "setup_dev.sh: installing $1 needs root; run: sudo apt-get install $1" >&2
  fi
}

# Chromium, for tests/test_app_browser.py: Playwright (requirements-dev.txt) drives the system's Chromium by its
# executable path, with no `playwright install` download; without it the browser tests are skipped and say why.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  apt_install chromium "the browser tests"
fi

# PostgreSQL, for tests/test_voice_store.py and tests/test_voice_store_serve.py: they start a real server (initdb
# into a temporary folder, pg_ctl on a free port) from Debian's postgresql binaries; without them they are skipped.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  apt_install postgresql "the voice store's database tests"
fi

# --- the openai npm package for tests/test_http_api.py's Node example -------------------------
# OpenAI's own Node example runs against the test server where node and npm are present; the
# package goes into .node-dev/ (scripts/test.sh points OMNIVOICE_NODE_MODULES there). Without
# npm, or when the registry cannot be reached, that one test is skipped and says why.
if command -v npm >/dev/null 2>&1 && [ ! -f .node-dev/node_modules/openai/package.json ]; then
  npm install --silent --no-audit --no-fund --prefix .node-dev openai@6.49.0 >/dev/null \
    || echo "setup_dev.sh: could not install the openai npm package; the Node example test will be skipped" >&2
fi
