"""Slash commands take plain text for every tool whose schema has exactly one required string
argument (issue 39: ``/file_read upload.csv`` needed JSON where ``/shell echo hi`` did not)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from chat_app.services.slash import _arguments
from tools_app.registry import TOOLS, BaseTool, unregister_tool


def test_it_takes_plain_text_for_one_required_string() -> None:
    assert _arguments(TOOLS["file_read"], "upload.csv") == ({"path": "upload.csv"}, None)
    assert _arguments(TOOLS["memory_search"], "the deploy key") == (
        {"query": "the deploy key"},
        None,
    )
    # Tools with a shorthand of their own keep it; JSON still works for all.
    assert _arguments(TOOLS["shell_exec"], "echo hi") == ({"command": "echo hi"}, None)
    assert _arguments(TOOLS["file_read"], '{"path": "a.txt"}') == ('{"path": "a.txt"}', None)


def test_it_still_asks_for_json_when_the_text_would_be_a_guess() -> None:
    class TwoStrings(BaseTool, group="time"):
        """Two required strings: which one the text is would be a guess."""

        first: str = Field(description="one")
        second: str = Field(description="two")

    class OneNumber(BaseTool, group="time"):
        """One required number: text is not one."""

        count: int = Field(description="how many")

    try:
        for tool in (TwoStrings, OneNumber, TOOLS["current_time"]):
            arguments, error = _arguments(tool, "some words")
            assert arguments == "some words"
            assert error is not None and "takes JSON arguments" in error
    finally:
        unregister_tool(TwoStrings.tool_name)
        unregister_tool(OneNumber.tool_name)


@pytest.mark.parametrize("name", sorted(n for n, t in TOOLS.items() if t.plain_text_field()))
def test_every_plain_text_tool_accepts_its_text(name: str) -> None:
    tool = TOOLS[name]
    arguments = tool.from_shorthand("x")
    assert arguments == {tool.plain_text_field(): "x"} or name in {
        "shell_exec",
        "http_request",
        "browser_open",
    }


@pytest.mark.django_db
def test_the_help_notice_is_a_line_per_group_showing_each_tools_plain_text_form(
    staff_user: Any,
) -> None:
    from chat_app.services.slash import help_text

    text = help_text(staff_user.pk)

    lines = text.splitlines()
    assert "`/tool text`" in lines[0] and "`/help tool`" in lines[0]
    assert any(line.startswith("- **File**: ") and "`/file_read <path>`" in line for line in lines)
    assert "`/shell <command>`" in text and "`/current_time`" in text
    assert len(lines) < 25 and len(text) < 3000, len(text)
    # One tool told in full: its description and an example.
    one = help_text(staff_user.pk, "file_read")
    assert one.startswith("`/file_read <path>` — Read a text file")
    assert '`/file_read {"path": ' in one
    assert help_text(staff_user.pk, "/current_time").startswith("`/current_time` — ")
    assert "No tool `nope`" in help_text(staff_user.pk, "nope")
