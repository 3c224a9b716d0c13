"""The checked-in schemas file (seed 000 #22): ``manage.py tools schemas --write
docs/tool-schemas.json`` writes it, and this test (like CI's ``--check``) fails when a tool's
schema changed and the file was not written again."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from tools_app.registry import TOOLS
from tools_app.schemas_file import COMMAND, SCHEMAS_PATH, built_in, schemas_text


def test_the_checked_in_schemas_file_is_up_to_date():
    assert SCHEMAS_PATH.read_text(encoding="utf-8") == schemas_text(), f"run `{COMMAND}`"
    call_command("tools", "schemas", "--check")


def test_it_lists_every_built_in_tool_in_openai_format():
    document = json.loads(SCHEMAS_PATH.read_text(encoding="utf-8"))
    names = [t["function"]["name"] for t in document["tools"]]
    assert sorted(names) == sorted(n for n, t in TOOLS.items() if built_in(t))
    assert document["count"] == len(names) and len(set(names)) == len(names)
    shell = next(t for t in document["tools"] if t["function"]["name"] == "shell_exec")
    assert shell["type"] == "function" and shell["group"] == "shell"
    assert shell["function"]["parameters"]["type"] == "object"


def test_a_stale_file_fails_the_check_and_write_fixes_it(tmp_path, capsys):
    stale = tmp_path / "tool-schemas.json"
    stale.write_text(schemas_text().replace("shell_exec", "shell_run"), encoding="utf-8")
    with pytest.raises(CommandError, match="out of date: run `manage.py tools schemas"):
        call_command("tools", "schemas", "--check", "--write", str(stale))
    call_command("tools", "schemas", "--write", str(stale))
    call_command("tools", "schemas", "--check", "--write", str(stale))
    assert stale.read_text(encoding="utf-8") == schemas_text()
