"""File: read, write, delete and list files in the conversation's workspace.

Paths are checked twice: lexically at binding (absolute paths, ``..`` escapes, allowed paths)
and again inside the sandbox, where symlinks are resolved (``sandbox_helper.py``)."""
