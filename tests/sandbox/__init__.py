"""Sandbox backends against a real Docker engine and real bubblewrap (no mocks).

``ALL`` / ``ISOLATED`` are the backend parametrisations for ``@pytest.mark.parametrize("box",
..., indirect=True)``; the ``box`` fixture (conftest) turns a name into a ready sandbox.
"""

from __future__ import annotations

import pytest

DOCKER = pytest.param("docker", marks=pytest.mark.docker)
# The same backend with one `docker exec` per command instead of its in-container runner.
DOCKER_EXEC = pytest.param("docker_exec", marks=pytest.mark.docker)
ISOLATED = [DOCKER, DOCKER_EXEC, "bubblewrap"]
ALL = [*ISOLATED, "none"]
