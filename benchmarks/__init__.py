"""enginelib benchmarks: retrieval quality and speed on BEIR datasets, against peers.

Run ``python -m benchmarks run --dataset scifact`` (see ``benchmarks/RESULTS.md``).
Peers (bm25s, LanceDB, Chroma) come from the ``.[bench]`` extra and are never imported by
the engine.
"""
