#!/usr/bin/env bash
# Install, ingest the demo corpus into ./demo-store, and print a cited search. No network needed at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "installing into .venv (log: .venv-install.log) ..."
bash scripts/install.sh > .venv-install.log 2>&1 || { tail -40 .venv-install.log; exit 1; }
export HF_HUB_OFFLINE=1
STORE="${ENGINELIB_DEMO_STORE:-demo-store}"
.venv/bin/enginelib ingest demo/ --store "$STORE" --truth-level L1 --source-type regulation --no-progress
.venv/bin/enginelib search "When must personal data be erased without undue delay?" --store "$STORE" --limit 3 --explain
.venv/bin/enginelib search "1K0615301M" --store "$STORE" --strategy auto --limit 2 --truth-level L1,L2
