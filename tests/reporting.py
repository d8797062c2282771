"""Counts a test prints into pytest's own output (the fault suite's figures), even while
pytest captures the test's output, and when the suite runs on several processes (``-n 2``):
a worker has no terminal of its own, so its lines go back with the worker's output when it
ends (xdist's ``workeroutput``) and the main process prints them after the run."""

from __future__ import annotations

from typing import Any

import pytest

KEY = "enginelib_figures"
_GATHERED = pytest.StashKey[list[str]]()


def say(request: pytest.FixtureRequest, line: str) -> None:
    worker_output = getattr(request.config, "workeroutput", None)
    if worker_output is not None:  # an xdist worker: printed by the main process
        worker_output.setdefault(KEY, []).append(line)
        return
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is None:
        return
    if capture is None:
        reporter.write_line(line)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


def gather(config: pytest.Config, node: Any) -> None:
    """Keep the lines a finished worker said (``pytest_testnodedown``)."""
    lines = getattr(node, "workeroutput", {}).get(KEY, [])
    config.stash.setdefault(_GATHERED, []).extend(str(line) for line in lines)


def figures_summary(reporter: pytest.TerminalReporter) -> None:
    """The workers' lines, once the run is over (none on a one-process run, where each was
    printed as it came)."""
    lines = reporter.config.stash.get(_GATHERED, [])
    if lines:
        reporter.write_sep("=", "figures the tests measured")
        for line in lines:
            reporter.write_line(line)
