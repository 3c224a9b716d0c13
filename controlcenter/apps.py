"""Project wiring that must run once per process, after the settings loaded: the state
directories and fork safety for database connections. Loading ``settings.py`` itself changes
nothing on disk but a first start's key."""

from __future__ import annotations

import contextlib

from django.apps import AppConfig
from django.conf import settings


class ControlCenterConfig(AppConfig):
    name = "controlcenter"
    verbose_name = "Control Center"

    def ready(self) -> None:
        from infra.dbfork import register_db_fork_safety

        state_dirs_create()
        # A forked child (Celery's prefork pool) must not use its parent's pool or connections.
        register_db_fork_safety()


def state_dirs_create() -> None:
    """``var/`` (SQLite lives there) and the static root (whitenoise warns when it is missing).
    The rest of ``var/`` (workspaces, media, browser sessions) is made where it is written."""
    var_dir = settings.VAR_DIR
    var_dir.mkdir(parents=True, exist_ok=True)
    # Sandboxes reach workspaces below it; if it is not ours to change, bubblewrap says so later.
    with contextlib.suppress(OSError):
        var_dir.chmod(var_dir.stat().st_mode | 0o111)
    settings.STATIC_ROOT.mkdir(exist_ok=True)
