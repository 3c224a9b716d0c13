"""Helpers for tests that use the REST API as a program would."""

from __future__ import annotations

import json
from typing import Any

import httpx2


def follow_turn(url: str, headers: dict[str, str], turn_id: int) -> dict[str, Any]:
    """Follow a turn's server-sent events (``GET /api/turns/{id}/events``) to its ``end``."""
    name = ""
    with httpx2.stream(
        "GET", f"{url}/api/turns/{turn_id}/events", headers=headers, timeout=60
    ) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "end":
                return dict(json.loads(line[6:]))
    raise AssertionError("the event stream ended without an end event")
