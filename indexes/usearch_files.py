"""The usearch backend's files, for the store core (see ``IndexFiles`` in base.py).

Its generations are laid out as the hnsw backend's (written into ``.tmp-gen-*``, renamed into
place, named by a stamp), so recovery and copying are the same code.
"""

from __future__ import annotations

from enginelib.indexes.hnsw_files import HnswFiles


class UsearchFiles(HnswFiles):
    """The hnsw backend's file handling, for a usearch graph and its rows."""
