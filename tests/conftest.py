"""Test tiers: `pytest -m "not slow"` is the quick loop; CI runs everything.

A test is slow when it needs a server, the real model, real processes racing each other, or a
whole-package tool (lint, types). Marking happens here, from what a test uses, so a new test
that takes the Postgres fixture or the `integration` mark is tiered without anyone remembering to.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.reporting import figures_summary, gather

# Whole modules whose every test is slow by nature: lint and types walk the package, the
# concurrency tests race real processes, the harness test runs a benchmark end to end, the
# CLI and fault modules run the program as real processes (and kill them), the web tests
# drive the whole server app.
SLOW_MODULES = frozenset({
    "test_lint", "test_concurrency", "test_bench_harness", "test_cli", "test_cli_hostile",
    "test_jobs_cli", "test_fault_injection", "test_web", "test_cli_prune",
})
# A test that kills a real process at a crash point (named so: test_..._kill..., sigkill).
KILLS = re.compile(r"kill", re.IGNORECASE)
# Fixtures that start something expensive (a Postgres server, a browser, the real model).
SLOW_FIXTURES = frozenset({"pg_server", "pg_dsn", "browser", "real_embedder", "e5_embedder"})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    figures_summary(terminalreporter)


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent when the suite runs in one process
def pytest_testnodedown(node: Any, error: Any) -> None:
    gather(node.config, node)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        fixtures = set(getattr(item, "fixturenames", ()))
        if (
            module in SLOW_MODULES
            or fixtures & SLOW_FIXTURES
            or item.get_closest_marker("integration") is not None
            or KILLS.search(item.name)
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def built_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store of the web tests' ``build_store`` per run: building it costs about 2 s,
    copying it (``tests.test_web.copy_of``) a few ms."""
    from tests.test_web import build_store

    root = tmp_path_factory.mktemp("web-store")
    build_store(root / "store", root / "src")
    # its jobs name these sources: no test may change them under another's copy
    for source in (root / "src").iterdir():
        source.chmod(0o444)
    return root / "store"
