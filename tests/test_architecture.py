"""The package's shape, checked on its source: no import circle, index files named only by the
store core and the index backends, SQL only in the catalog layer.

The walks read the code with ``ast`` (nothing is imported), so a failure names the module and
line to fix. Imports under ``if TYPE_CHECKING:`` are left out of the import graph: they are
annotations, never executed, and a facade's type may be named by the operations it composes.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "enginelib"


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name. ``enginelib/indexes`` and ``enginelib/cli``
    are symlinks to the top-level folders, so the walk follows links (``Path.rglob`` would
    skip them)."""
    found = {}
    for folder, _dirs, files in os.walk(PACKAGE, followlinks=True):
        for file in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder) / file
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return dict(sorted(found.items()))


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        ):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (top-level and function-level alike)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        graph[name].add(f"{target}.{alias.name}")
                    elif target in modules:
                        graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _one_circle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete import path round a component, for the failure message."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                return paths[node] + [start]
            if child not in paths:
                paths[child] = paths[node] + [child]
                queue.append(child)
    return component


def test_the_cycle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert _one_circle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_imports_and_skips_type_checking() -> None:
    graph = import_graph()
    # store.py imports its operations inside methods; the walk must count those.
    assert "enginelib.search.engine" in graph["enginelib.store"]
    assert all(name.startswith("enginelib") for name in graph)
    # the symlinked folders are part of the package
    assert "enginelib.indexes.hnsw" in graph and "enginelib.cli.main" in graph


def test_no_import_circle_among_the_package_modules() -> None:
    graph = import_graph()
    found = [f"{len(c)} modules {c}, e.g. " + " -> ".join(_one_circle(graph, c))
             for c in cycles(graph)]
    assert not found, "import circles:\n" + "\n".join(found)


# -- index files ----------------------------------------------------------------------------

# Names of files inside an index backend's folder: only the backends (enginelib/indexes) and
# the store core, which asks them through ``IndexFiles``, may spell these.
INDEX_FILE_NAMES = ("stamp.json", "meta.json", ".tantivy", ".del", "tmp-gen", "vectors.hnsw",
                    "labels.npy", "vectors.npy", "managed.json")
INDEX_FILE_OWNERS = ("enginelib.indexes", "enginelib.core")


def _string_constants(tree: ast.AST) -> list[ast.Constant]:
    """String literals that are not docstrings (prose may mention a file; code may not)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docstrings]


def _owned(name: str, owners: tuple[str, ...]) -> bool:
    return any(name == owner or name.startswith(owner + ".") for owner in owners)


def test_only_the_core_and_the_backends_name_index_files() -> None:
    found = []
    for name, path in _modules().items():
        if _owned(name, INDEX_FILE_OWNERS):
            continue
        for node in _string_constants(ast.parse(path.read_text(encoding="utf-8"))):
            # a name, not the start of a word: "store.delete_snapshot()" names no ".del" file
            hits = [f for f in INDEX_FILE_NAMES
                    if re.search(re.escape(f) + r"(?![A-Za-z_])", node.value)]
            if hits:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {hits}")
    assert not found, "index files named outside the core and the backends:\n" + "\n".join(found)


def test_the_index_file_check_sees_a_stamp_in_code() -> None:
    tree = ast.parse('"""stamp.json in prose is fine."""\nSTAMP = "stamp.json"\n')
    assert [n.value for n in _string_constants(tree)] == ["stamp.json"]


# -- SQL ------------------------------------------------------------------------------------

# The catalog layer: the DuckDB tables and every statement run on them.
# jobs.table holds the queue's statements, jobs.shape the check and mend of its tables' layout
CATALOG_LAYER = ("enginelib.catalog", "enginelib.schema", "enginelib.jobs.table", "enginelib.jobs.shape")
CATALOG_PREFIX = "enginelib.catalog_"  # catalog_maintenance, catalog_snapshots, ...
SQL_ALLOWED = {
    # The Postgres exporter writes the *target* database's SQL (DDL, COPY, hybrid_search),
    # built with psycopg.sql: that is the target's layer, not the catalog's. Its reads of
    # the DuckDB catalog live in catalog_export.py like every other catalog statement.
    "enginelib.export.pg_functions": "Postgres SQL of the export target",
    "enginelib.export.pg_load": "Postgres SQL of the export target",
    "enginelib.export.pg_schema": "Postgres SQL of the export target",
    "enginelib.export.pg_security": "Postgres SQL of the export target",
    "enginelib.export.pg_text_stats": "Postgres SQL of the export target",
    "enginelib.export.plan": "Postgres SQL of the export target",
    "enginelib.export.verify": "Postgres SQL of the export target (the parity check's queries)",
}
_SQL_START = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|COPY|WITH|PRAGMA)\s")
_RUNS_SQL = {"execute", "executemany", "sql"}


def _in_catalog_layer(name: str) -> bool:
    return _owned(name, CATALOG_LAYER) or name.startswith(CATALOG_PREFIX)


def sql_outside_the_catalog(source: str) -> list[tuple[int, str]]:
    """(line, what) of every SQL literal and every statement run in ``source``."""
    tree = ast.parse(source)
    found = []
    for node in _string_constants(tree):
        if _SQL_START.match(node.value):
            found.append((node.lineno, f"SQL literal {node.value.strip()[:40]!r}"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _RUNS_SQL):
            found.append((node.lineno, f".{node.func.attr}(...)"))
    return found


def test_the_sql_check_sees_literals_and_calls() -> None:
    source = 'X = "SELECT 1"\ncon.execute(X)\nnote = "Select the best"\n'
    assert sql_outside_the_catalog(source) == [(1, "SQL literal 'SELECT 1'"), (2, ".execute(...)")]


def test_sql_lives_only_in_the_catalog_layer() -> None:
    found = []
    for name, path in _modules().items():
        if _in_catalog_layer(name) or _owned(name, tuple(SQL_ALLOWED)):
            continue
        for line, what in sql_outside_the_catalog(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert not found, "SQL outside the catalog layer:\n" + "\n".join(found)
