"""The search package's modules import one another without a circle (issue 16), counting
imports inside functions too (a deferred import is still a circle) but not those under
``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
from pathlib import Path

import enginelib.search

PACKAGE = Path(enginelib.search.__file__).parent


def _imports(path: Path) -> set[str]:
    """Sibling modules of ``enginelib.search`` that ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for child in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("enginelib.search."):
            found.add(node.module.split(".")[2])
    return found


def _graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {name: _imports(path) & set(modules) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_walk_sees_the_imports() -> None:
    graph = _graph()
    assert {"retrieve", "hits", "results"} <= graph["stages"]
    assert "stages" in graph["engine"]


def test_no_import_circle_in_the_search_package() -> None:
    assert _cycle(_graph()) is None


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
