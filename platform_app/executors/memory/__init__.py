"""Memory: archival memory (memory_save, memory_search: hybrid full-text + vector search)
and core memory (memory_core_get/update/delete: a few facts always in the system prompt).

Per user: every call reads and writes only the calling user's memory. Runs in the worker, no
sandbox (it runs no commands and touches no files); the state and the search live in
``platform_app``."""
