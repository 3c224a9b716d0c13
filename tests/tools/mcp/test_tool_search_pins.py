"""tool_search and imported tools (issue 38): a tool an MCP server added at run time is not
found until an admin accepts it, and a definition its server rewrote (an injection in the
description) is found as pinned, never with the new words."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.calls import ok, run_tool
from tests.tools.mcp.changing_server import POISON
from tests.tools.mcp.test_definition_pins import (  # noqa: F401 - fixtures
    change,
    changing_url,
    held,
)
from tests.tools.mcp.test_definition_pins import source as source  # noqa: F401 - a fixture
from tools_app.models import ToolSource
from tools_app.services.pins import source_review_decide

pytestmark = [pytest.mark.tool_search]


def found(user: Any, query: str) -> dict[str, str]:
    result = ok(run_tool("tool_search", user=user, query=query))
    return {f["name"]: f["description"] for f in result["found"]}


def test_an_unreviewed_tool_is_not_found_until_accepted(
    source: ToolSource, staff_user: Any, user: Any
) -> None:
    assert "note" in found(user, "take a note")  # the source is granted (tests' Everyone)
    change(staff_user, "add")
    held(source, "sneaky", "new")
    assert "sneaky" not in found(user, "sneaky tool added at run time")
    source_review_decide(source, remote="sneaky", accept=True, user=staff_user)
    assert "sneaky" in found(user, "sneaky tool added at run time")


def test_a_rewritten_description_is_found_as_pinned(
    source: ToolSource, staff_user: Any, user: Any
) -> None:
    change(staff_user, "poison")
    held(source, "note", "changed")
    descriptions = found(user, "note")
    assert descriptions["note"] == "Take a note."
    assert POISON[:30] not in str(descriptions)
