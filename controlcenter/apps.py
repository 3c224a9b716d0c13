"""Project wiring that must run once per process, after the settings loaded: the state
directories, fork safety for database connections, and the checks of the project's own
settings. Loading ``settings.py`` itself changes nothing on disk but a first start's key."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks


class ControlCenterConfig(AppConfig):
    name = "controlcenter"
    verbose_name = "Control Center"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from infra.dbfork import register_db_fork_safety
        from infra.sqlite_checkpoint import on_connection_created

        state_dirs_create()
        # A forked child (Celery's prefork pool) must not use its parent's pool or connections.
        register_db_fork_safety()
        # SQLite: WAL checkpoints in a background thread, not in the commit that fills the WAL.
        connection_created.connect(on_connection_created, dispatch_uid="cc-sqlite-checkpoint")
        checks.register(var_dir_usable, "controlcenter")


def state_dirs_create() -> None:
    """``var/`` (SQLite lives there) and the static root (whitenoise warns when it is missing).
    The rest of ``var/`` (workspaces, media, browser sessions) is made where it is written."""
    var_dir = settings.VAR_DIR
    var_dir.mkdir(parents=True, exist_ok=True)
    # Sandboxes reach workspaces below it; if it is not ours to change, bubblewrap says so later.
    with contextlib.suppress(OSError):
        var_dir.chmod(var_dir.stat().st_mode | 0o111)
    settings.STATIC_ROOT.mkdir(exist_ok=True)


def var_dir_usable(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The state directory must be a directory this process can write (the database, the
    generated secret key and the workspaces live there)."""
    var_dir = settings.VAR_DIR
    if not var_dir.is_dir() or not os.access(var_dir, os.W_OK | os.X_OK):
        return [
            checks.Error(
                f"the state directory {var_dir} is not a writable directory",
                hint="Set CC_VAR_DIR to a directory this user may write, or fix its owner.",
                id="controlcenter.E001",
            )
        ]
    return []
