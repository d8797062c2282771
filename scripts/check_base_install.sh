#!/usr/bin/env bash
# The small, torch-free install as a user gets it: a fresh venv and `pip install .` only.
# Asserts no torch, reports the size of enginelib and its dependencies per package (limit
# 300, both as MiB on disk, `du -sm`, and as MB = 10^6 bytes of files), answers a cited search on demo/ with the network cut, checks that the
# search imports none of the optional stacks and that the Postgres export names its extra,
# then installs pytest and runs the user test example (examples/test_with_enginelib.py).
#
# Measured: the venv's site-packages holds exactly what `pip install .` put there. The venv
# is made without pip (pip and setuptools, ~20 MB, are the venv's tools, not enginelib's
# dependencies: `uv venv` or `python -m venv --without-pip` give the same), and this
# machine's pip installs into it with `pip --python` (pip >= 22.3).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python3}"
LIMIT_MB="${ENGINELIB_BASE_LIMIT_MB:-300}"
WORK="$(mktemp -d -t enginelib-base-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
VENV="$WORK/venv"
PIP=("$PY" -m pip --python "$VENV/bin/python" --disable-pip-version-check)

echo "== fresh venv in $VENV"
"$PY" -m venv --without-pip "$VENV"
# A copy of the tree, so nothing the build writes lands in the checkout.
cp -r "$REPO" "$WORK/src"
rm -rf "$WORK/src/.venv" "$WORK/src/build" "$WORK/src"/*.egg-info "$WORK/src/benchmarks/.cache" \
       "$WORK/src/benchmarks/.work"
"${PIP[@]}" install --quiet "$WORK/src"

echo "== no torch"
if "$VENV/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"; then
    echo "FAIL: torch is installed by the base install" >&2
    exit 1
fi
if "${PIP[@]}" list 2>/dev/null | grep -iE '^(torch|nvidia-|sentence-transformers) '; then
    echo "FAIL: torch-related packages in the base install" >&2
    exit 1
fi
echo "ok: no torch, no sentence-transformers, no nvidia-* packages"

echo "== size"
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
SIZE_MB="$(du -sm "$SITE" | cut -f1)"
echo "site-packages: ${SIZE_MB} MiB on disk (du -sm; limit ${LIMIT_MB}) at $SITE"
# Per distribution, from each one's RECORD (file sizes, MB = 10^6 bytes; du also counts blocks).
"$VENV/bin/python" - "$SITE" "$WORK/total_mb" <<'PYSIZES'
import os, sys
from importlib import metadata
site = sys.argv[1]
rows = []
for dist in metadata.distributions(path=[site]):
    size = sum(os.path.getsize(os.path.join(site, f)) for f in dist.files or []
               if os.path.isfile(os.path.join(site, f)))
    rows.append((size / 1e6, f"{dist.metadata['Name']}=={dist.version}"))
for mb, name in sorted(rows, reverse=True):
    print(f"  {mb:7.1f} MB  {name}")
total = sum(mb for mb, _ in rows)
print(f"  {total:7.1f} MB  total of {len(rows)} distributions (file sizes)")
open(sys.argv[2], "w").write(f"{total:.1f}")
PYSIZES
TOTAL_MB="$(cat "$WORK/total_mb")"
if [ "$SIZE_MB" -gt "$LIMIT_MB" ]; then
    echo "FAIL: the base install is over ${LIMIT_MB} MiB on disk" >&2
    exit 1
fi
# "300 MB" read in decimal units too: the files alone must fit.
if ! awk -v t="$TOTAL_MB" -v l="$LIMIT_MB" 'BEGIN { exit !(t <= l) }'; then
    echo "FAIL: the base install's files are ${TOTAL_MB} MB, over ${LIMIT_MB} MB" >&2
    exit 1
fi

echo "== a cited search on demo/, offline"
# Run outside the checkout so the installed package, not the source tree, is imported.
cd "$WORK"
OFFLINE=(env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1)
if unshare -n true 2>/dev/null; then
    OFFLINE=(unshare -n env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1)  # no network at all
else
    echo "(unshare -n is not permitted here: offline by environment only)"
fi
"${OFFLINE[@]}" "$VENV/bin/enginelib" ingest "$REPO/demo" --store "$WORK/store" --truth-level L1 --no-progress
"${OFFLINE[@]}" "$VENV/bin/enginelib" search "When must personal data be erased without undue delay?" \
    --store "$WORK/store" --limit 3 --json > "$WORK/answer.json"
"$VENV/bin/python" - "$WORK/answer.json" <<'PYCHECK'
import json, sys
answer = json.load(open(sys.argv[1]))
hits = answer["hits"]
assert hits, f"no hits: {answer.get('status')} {answer.get('reason')}"
top = hits[0]
citation = top["citation"]
assert top["document_id"] == "gdpr_selected_articles.md", top["document_id"]
assert citation["document_id"] == top["document_id"] and citation["quote"], citation
assert any("Article 17" in h["content"] for h in hits), "no hit holds Article 17"
print(f"ok: {citation['display_text']} at {citation['start_offset']}..{citation['end_offset']}")
PYCHECK
grep -q '"embedding_model": "e5-small"' "$WORK/store/manifest.json" && echo "ok: store built with e5-small"

echo "== what a search imports"
"${OFFLINE[@]}" "$VENV/bin/python" - "$WORK/store" <<'PYIMPORTS'
import sys
import enginelib
with enginelib.open(sys.argv[1], read_only=True) as store:
    assert store.search("right to erasure", limit=3).hits
optional = ("torch", "sentence_transformers", "psycopg", "rich", "pyarrow")
loaded = [m for m in optional if m in sys.modules]
print(f"loaded of {optional}: {loaded or 'none'}")
assert not {"torch", "sentence_transformers", "psycopg", "rich"} & set(loaded), loaded
PYIMPORTS

echo "== the Postgres export without its extra"
set +e
"${OFFLINE[@]}" "$VENV/bin/enginelib" export postgres --store "$WORK/store" --sql-file "$WORK/out.sql" \
    > "$WORK/export.txt" 2>&1
status=$?
set -e
if [ "$status" -ne 2 ] || ! grep -q "enginelib\[postgres\]" "$WORK/export.txt"; then
    echo "FAIL: export without psycopg (exit $status): $(cat "$WORK/export.txt")" >&2
    exit 1
fi
echo "ok: $(grep -o "needs the package.*" "$WORK/export.txt")"

echo "== the user test example"
EXAMPLE="$REPO/examples/test_with_enginelib.py"
if [ -f "$EXAMPLE" ]; then
    "${PIP[@]}" install --quiet pytest
    mkdir -p "$WORK/usertest" && cp "$EXAMPLE" "$WORK/usertest/"
    (cd "$WORK/usertest" && "${OFFLINE[@]}" "$VENV/bin/python" -m pytest -q -p no:cacheprovider test_with_enginelib.py)
    leftovers="$(find "$WORK/usertest" -mindepth 1 -not -name 'test_with_enginelib.py' -not -path '*__pycache__*' | head -5)"
    if [ -n "$leftovers" ]; then
        echo "FAIL: the user test left files behind: $leftovers" >&2
        exit 1
    fi
    echo "ok: the user test example passes and leaves no file behind"
else
    echo "SKIP: examples/test_with_enginelib.py is not in this tree yet (branch edge); wire it when merged"
fi
echo "base install check passed (${SIZE_MB} MiB on disk, ${TOTAL_MB} MB of files)"
