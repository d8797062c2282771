"""The store core: the folder's layout, the writer lock, opening and following generations,
and the commit protocol. Operations (ingest, search, maintenance, snapshots, export, jobs)
sit on it; ``enginelib.store.Store`` is the facade that composes them.

Deliberately empty: import the module you need (``core.layout`` is imported by the lowest
layers, so this package must not pull the rest in).
"""
