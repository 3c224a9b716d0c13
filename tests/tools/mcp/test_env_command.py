"""``manage.py mcp_servers`` and a stdio server's environment: secret values come from a prompt,
stdin or an env file - never from the command line - and lists show names only."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tools_app.models import AuditRecord, ToolSource
from tools_app.services.sources import source_secrets


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch) -> Any:
    def feed(text: str) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(text))

    return feed


def env_of(name: str) -> dict[str, str]:
    return source_secrets(ToolSource.objects.get(name=name)).get("env", {})


def test_add_reads_secret_values_from_stdin_and_lists_names_only(
    transactional_db: None, stdin: Any
) -> None:
    stdin("pat-secret-1\nbrave-secret-2\n")
    out = run(
        "mcp_servers", "add", "gh", "--command", "github-mcp-server stdio",
        "--env", "GITHUB_PERSONAL_ACCESS_TOKEN", "--env", "BRAVE_API_KEY",
        "--plain-env", "GITHUB_TOOLSETS=repos", "--no-refresh",
    )  # fmt: skip
    assert "registered MCP server gh" in out
    assert env_of("gh") == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "pat-secret-1",
        "BRAVE_API_KEY": "brave-secret-2",
    }
    listing = run("mcp_servers", "list")
    assert "GITHUB_PERSONAL_ACCESS_TOKEN (secret, set)" in listing
    assert "GITHUB_TOOLSETS=repos" in listing
    assert "pat-secret-1" not in listing and "brave-secret-2" not in listing


def test_add_reads_an_env_file(transactional_db: None, tmp_path: Path) -> None:
    env_file = tmp_path / "jira.env"
    env_file.write_text(
        "# Atlassian\nJIRA_URL=https://example.atlassian.net\nexport JIRA_USERNAME=me@example.org\n"
        "JIRA_API_TOKEN='tok en#1'\n"
    )
    run("mcp_servers", "add", "jira", "--command", "mcp-atlassian", "--env-file", str(env_file),
        "--no-refresh")  # fmt: skip
    assert env_of("jira") == {
        "JIRA_URL": "https://example.atlassian.net",
        "JIRA_USERNAME": "me@example.org",
        "JIRA_API_TOKEN": "tok en#1",
    }


def test_a_value_on_the_command_line_is_refused(transactional_db: None) -> None:
    with pytest.raises(CommandError, match="takes a name only"):
        run("mcp_servers", "add", "gh", "--command", "x", "--env", "API_KEY=visible-in-ps")
    assert not ToolSource.objects.exists()


def test_refused_names_say_why(transactional_db: None, stdin: Any) -> None:
    refused = [
        ("LD_PRELOAD", "dynamic loader"),
        ("PATH", "which program runs"),
        ("PYTHONHOME", "interpreter"),
        ("9LIVES", "not an environment variable"),
    ]
    for name, why in refused:
        stdin("x\n")
        with pytest.raises(CommandError, match=why):
            run("mcp_servers", "add", "gh", "--command", "x", "--env", name, "--no-refresh")
    assert not ToolSource.objects.exists()


def test_missing_or_empty_values_are_refused(
    transactional_db: None, stdin: Any, tmp_path: Path
) -> None:
    stdin("")
    with pytest.raises(CommandError, match="no value for API_KEY on stdin"):
        run("mcp_servers", "add", "gh", "--command", "x", "--env", "API_KEY", "--no-refresh")
    stdin("\n")
    with pytest.raises(CommandError, match="is empty"):
        run("mcp_servers", "add", "gh", "--command", "x", "--env", "API_KEY", "--no-refresh")
    bad = tmp_path / "bad.env"
    bad.write_text("API_KEY\n")
    with pytest.raises(CommandError, match="API_KEY has no value"):
        run("mcp_servers", "add", "gh", "--command", "x", "--env-file", str(bad), "--no-refresh")
    with pytest.raises(CommandError, match="cannot read"):
        run("mcp_servers", "add", "gh", "--command", "x", "--env-file", str(tmp_path / "none"))


def test_env_replaces_removes_and_lists(transactional_db: None, stdin: Any) -> None:
    stdin("first-secret\n")
    run("mcp_servers", "add", "gh", "--command", "x", "--env", "TOKEN", "--no-refresh")
    stdin("second-secret\n")
    out = run("mcp_servers", "env", "gh", "--env", "TOKEN", "--plain-env", "REGION=eu")
    assert "gh: TOKEN (secret, set), REGION=eu" in out
    assert env_of("gh") == {"TOKEN": "second-secret"}
    out = run("mcp_servers", "env", "gh", "--unset", "TOKEN")
    assert out.strip().endswith("gh: REGION=eu")
    assert env_of("gh") == {}
    assert run("mcp_servers", "env", "gh").strip() == "gh: REGION=eu"
    after = [r.detail["after"] for r in AuditRecord.objects.filter(group="mcp_gh").order_by("id")]
    assert [a.get("env TOKEN") for a in after] == ["set", "changed", "removed"]
    assert "first-secret" not in str(after) and "second-secret" not in str(after)


def test_env_is_for_stdio_servers(transactional_db: None) -> None:
    from tools_app.executors.mcp.services import mcp_server_add

    mcp_server_add(name="remote", url="http://127.0.0.1:9/mcp", allow_private=True)
    with pytest.raises(CommandError, match="for stdio servers"):
        run("mcp_servers", "env", "remote", "--plain-env", "A=b")
