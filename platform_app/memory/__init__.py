"""Archival memory (chunks searched by full text and vectors) and core memory (a few facts
always in the system prompt). ``services.py`` is the entry point."""

# The local embedder's model (``minilm.py``), named here: the embedder's id is asked for in
# every process, and the module that runs the model imports numpy (~15 MiB).
LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
