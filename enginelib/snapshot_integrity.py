"""Whether a snapshot can be trusted: its tables, its index files, the live files it copies.

``snapshots.py`` creates, opens, lists, diffs and restores snapshots; this module only
judges their files. A damaged table makes a snapshot unusable (``damage``); a damaged index
file does not, since indexes are derived from the tables: an open rebuilds that index in
memory and says so (``untrusted_indexes``, ``wrong_older_vectors``). Snapshots written
before the per-file sums (``snapshot_files.py``) get the checks they can: their tables'
CRC-32s, Tantivy's own footers, a sample of their vectors.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from . import catalog_snapshots as cs
from . import snapshot_files as sf
from .catalog import Catalog
from .core import layout
from .core.layout import SNAPSHOT_INFO_NAME as INFO_NAME
from .core.layout import SNAPSHOT_OPTIONAL_TABLES as OPTIONAL_TABLES
from .core.layout import SNAPSHOT_TABLES as TABLES
from .core.layout import SNAPSHOT_TABLES_DIR as TABLES_DIR
from .core.store_core import StoreCore
from .durable import file_crc32
from .errors import IntegrityError
from .index_audit import verify_files, wrong_vectors
from .indexes import TEXT_FILES
from .text import shell_word


def damage(folder: Path) -> str | None:
    """What makes a snapshot unusable (its snapshot.json unreadable, a table missing, not
    Parquet, or a table or its manifest not the bytes it was written with), or None. Its
    index files are derived from the tables: see ``index_damage``."""
    try:
        info = sf.read_info(folder)
    except OSError as exc:
        return f"{INFO_NAME} cannot be read ({exc.strerror})"
    except ValueError as exc:
        return str(exc)
    # the plainer reason first: a file missing or cut short fails its checksum too
    problem = _unreadable_table(folder)
    if problem is not None:
        return problem
    sums = sf.recorded_sums(info)
    if sums is None:
        return _table_crc_problem(folder, info)
    found = sf.problems(folder, sums, indexes=False)
    return str(found[0]) if found else None


def index_damage(folder: Path) -> dict[str, sf.FileProblem]:
    """Index kind -> the first of its files that is not the one the snapshot wrote. Empty
    for a snapshot written before the per-file sums (its index files are not checksummed)
    or whose snapshot.json cannot be read (``damage`` says so)."""
    try:
        sums = sf.recorded_sums(sf.read_info(folder))
    except (OSError, ValueError):
        return {}
    out: dict[str, sf.FileProblem] = {}
    for problem in sf.problems(folder, sums or {}, indexes=True):
        out.setdefault(str(problem.index_kind), problem)
    return out


def checksummed(folder: Path) -> bool:
    """Whether the snapshot recorded a sum of every file it holds (those written before
    did so for their tables only)."""
    try:
        return sf.recorded_sums(sf.read_info(folder)) is not None
    except (OSError, ValueError):
        return False


def _unreadable_table(folder: Path) -> str | None:
    catalog = Catalog.in_memory(1)
    try:
        for table in TABLES:
            path = layout.snapshot_table(folder, table)
            if table in OPTIONAL_TABLES and not path.exists():
                continue
            if not path.is_file():
                return f"{TABLES_DIR}/{path.name} is missing"
            if cs.unreadable_parquet(catalog, path):
                return f"{TABLES_DIR}/{path.name} is not a readable Parquet file (cut short or overwritten)"
    finally:
        catalog.close()
    return None


def _table_crc_problem(folder: Path, info: dict[str, Any]) -> str | None:
    """A snapshot written before the per-file sums: its tables' CRC-32s, if it has them."""
    recorded = info.get("table_crc32")
    for file_name, crc in (recorded.items() if isinstance(recorded, dict) else ()):
        path = folder / TABLES_DIR / str(file_name)
        try:
            if path.is_file() and file_crc32(path) != crc:
                # A flipped byte, or another snapshot's table: Parquet reads it, and the
                # snapshot answered wrongly (another store's documents, no chunks at all).
                return f"{TABLES_DIR}/{file_name} is not the file the snapshot wrote (damaged or replaced)"
        except OSError as exc:
            return f"{TABLES_DIR}/{file_name} cannot be read ({exc.strerror})"
    return None



def check_sealable(store: StoreCore) -> None:
    """Raise unless the live index files hold what the catalog says: a snapshot copies them
    and records their checksums, so damage copied in would pass every later check, and stay
    after `repair` mended the live store."""
    catalog = store._catalog
    bad, compared = wrong_vectors(catalog, store._vector_index, catalog.all_labels())
    catalog.release()
    problems = [f"{len(bad)} of {compared} sampled chunks hold other vectors than the "
                f"catalog's"] if len(bad) else []
    problems += verify_files(TEXT_FILES[store.manifest.text_backend],
                             layout.text_folder(layout.index_root(store.path)))
    if problems:
        raise IntegrityError(
            f"the live index files of {store.path} are damaged ({problems[0]}): a snapshot "
            f"would keep the damage; run `enginelib repair --store {shell_word(store.path)}`, "
            f"then take the snapshot", path=store.path)



def untrusted_indexes(folder: Path, text_backend: str) -> frozenset[str]:
    """The index kinds of snapshot ``folder`` whose files are not those it wrote, each named in
    a RuntimeWarning: an open rebuilds them in memory from the snapshot's verified tables. A
    snapshot taken before the per-file sums has Tantivy's own footer CRCs checked instead
    (every text file read: older snapshots only)."""
    found = {kind: str(problem) for kind, problem in index_damage(folder).items()}
    if not checksummed(folder):
        problems = verify_files(TEXT_FILES[text_backend],
                                layout.text_folder(layout.index_root(folder)))
        if problems:
            found[layout.TEXT_DIR] = problems[0]
    for kind, problem in found.items():
        _warn_rebuilt(folder, kind, problem)
    return frozenset(found)


def wrong_older_vectors(folder: Path, store: StoreCore) -> bool:
    """Whether snapshot ``folder``, taken before the per-file sums, holds vector rows that are
    not its tables' (a sample is compared: a damaged rows file reads without error and ranks
    wrongly); named in a RuntimeWarning when it does."""
    if checksummed(folder):
        return False
    bad, compared = wrong_vectors(store._catalog, store._vector_index, store._catalog.all_labels())
    if not len(bad):
        return False
    _warn_rebuilt(folder, layout.VECTOR_DIR, f"{len(bad)} of {compared} sampled chunks of its "
                                             f"vector index hold other vectors than its tables")
    return True


def _warn_rebuilt(folder: Path, kind: str, problem: str) -> None:
    warnings.warn(
        f"enginelib: snapshot {folder.name!r}: {problem}: its {sf.index_name(kind)} is rebuilt "
        f"from the snapshot's tables at each open (answers stay right, opening takes longer); "
        f"`enginelib check --store {shell_word(folder.parent.parent)}` lists such files",
        RuntimeWarning, stacklevel=4)


__all__ = ["OPTIONAL_TABLES", "check_sealable", "checksummed", "damage", "index_damage",
           "untrusted_indexes", "wrong_older_vectors"]
