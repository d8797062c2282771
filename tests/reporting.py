"""Counts a test prints into pytest's own output (the fault suite's figures), even while
pytest captures the test's output."""

from __future__ import annotations

import pytest


def say(request: pytest.FixtureRequest, line: str) -> None:
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is None:
        return
    if capture is None:
        reporter.write_line(line)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)
