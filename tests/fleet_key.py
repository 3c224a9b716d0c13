"""The distributed pass's ``SECRET_KEY``: loaded with ``-p`` (pyproject's addopts), before
pytest-django loads the settings, which happens before any conftest.

In distributed mode every process needs the same key, given to it (the settings refuse to
generate one). The test session sets one here when the environment names none; the processes
it starts (workers, runners, app servers: ``tests.conftest.child_env`` copies the environment)
all get the same. Embedded mode keeps generating its own into ``var/``.
"""

from __future__ import annotations

import os
import secrets

if (
    os.environ.get("REDIS_URL")
    and not os.environ.get("SECRET_KEY")
    and not os.environ.get("SECRET_KEY_FILE")
):
    os.environ["SECRET_KEY"] = "test-distributed-" + secrets.token_urlsafe(40)
