from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _forget_defined() -> Iterator[None]:
    from tools_app.imported import imported_reset

    imported_reset()
    yield
    imported_reset()
