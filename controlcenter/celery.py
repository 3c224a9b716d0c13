from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlcenter.settings")

from infra.celery_app import app  # noqa: E402  (the settings module must be named first)

__all__ = ["app"]
