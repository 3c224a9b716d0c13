"""Archival memory (chunks searched by full text and vectors) and core memory (a few facts
always in the system prompt). ``services.py`` is the entry point."""
