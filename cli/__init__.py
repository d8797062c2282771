"""The `enginelib` command line (imports as enginelib.cli)."""
