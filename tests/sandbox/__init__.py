"""Sandbox backends against a real Docker engine and real bubblewrap (no mocks).

``ALL`` / ``ISOLATED`` are the backend parametrisations for ``@pytest.mark.parametrize("box",
..., indirect=True)``; the ``box`` fixture (conftest) turns a name into a ready sandbox.
"""

from __future__ import annotations

import pytest

DOCKER = pytest.param("docker", marks=pytest.mark.docker)
ISOLATED = [DOCKER, "bubblewrap"]
ALL = [*ISOLATED, "none"]
