"""The generated ``SECRET_KEY``: read from ``var/secret_key``, written there on the first start.

Settings call this while they load, and that cannot wait for ``AppConfig.ready()``: Django reads
``SECRET_KEY`` from the settings module itself, and every entry point (``manage.py``, the ASGI
app, Celery, pytest, a script's ``django.setup()``) may use it before any app is ready (the
secrets at rest derive their default key from it too). So the read happens at import, and the
write happens only once per state directory, here, the first time a process finds no file.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def secret_key_read_or_create(key_file: Path) -> str:
    """The key in ``key_file``; on the first start, a new random one written there (mode 0600).

    Processes that share the directory (docker-compose's ``state`` volume) share the key: the
    first one to start creates the file atomically, the others read it."""
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        fresh = key_file.with_name(f".{key_file.name}.{os.getpid()}")
        fresh.write_text(secrets.token_urlsafe(50))
        fresh.chmod(0o600)
        try:
            os.link(fresh, key_file)  # atomic: exactly one process's key wins
        except FileExistsError:
            pass
        finally:
            fresh.unlink()
    return key_file.read_text().strip()
