"""Starting the app in embedded mode logs no warning of kombu's (issue 23).

Celery's broker URL was ``memory://``: with no host in it, kombu logged "No hostname was
supplied. Reverting to default 'localhost'" twice as the in-process worker started."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from tests.e2e.conftest import run_app_server


def test_the_embedded_start_logs_no_kombu_hostname_warning(transactional_db: None) -> None:
    if settings.MODE != "embedded":
        pytest.skip("the in-process worker runs in embedded mode only")
    log = Path(settings.VAR_DIR) / "test-embedded-start.log"
    log.unlink(missing_ok=True)
    with run_app_server("--no-beat", log_name=log.name):
        pass
    text = log.read_text()
    assert "on http://" in text, text  # it did start
    assert "No hostname was supplied" not in text, text
    assert "kombu" not in text, text
