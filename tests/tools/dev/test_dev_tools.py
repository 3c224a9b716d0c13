"""The dev toolset through the real path: run_tests, git, search_code, and the file tools under
their coding-agent names (bound to the file activities and governed by the File and Shell
groups' settings), on docker and bubblewrap."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.tools.conftest import ISOLATED, Tools, configure, use_backend
from tools_app.models import ToolCall

pytestmark = pytest.mark.parametrize("backend", ISOLATED, indirect=True)

FAILING = "def test_one():\n    assert 1 + 1 == 3\n"
PASSING = "def test_one():\n    assert 1 + 1 == 2\n"


def _write(tools: Tools, path: str, content: str) -> None:
    call = tools.call("write_file", path=path, content=content)
    assert call.status == ToolCall.Status.SUCCEEDED, call.result


def _host_git(tools: Tools, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(tools.workspace), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def test_run_tests_fails_with_the_pytest_output(tools: Tools) -> None:
    _write(tools, "test_sample.py", FAILING)
    call = tools.call("run_tests")
    assert call.status == ToolCall.Status.FAILED
    assert call.error.startswith("tests failed: ") and "1 failed" in call.error, call.error
    assert call.result["success"] is False
    assert call.result["returncode"] == 1
    assert "FAILED test_sample.py::test_one - assert (1 + 1) == 3" in call.result["output"]
    assert "1 failed" in call.output  # streamed to the card as it ran
    assert not (tools.workspace / "__pycache__").exists()


def test_run_tests_succeeds_when_they_pass(tools: Tools) -> None:
    _write(tools, "tests/test_sample.py", PASSING)
    _write(tools, "tests/test_other.py", FAILING)
    call = tools.call("run_tests", command="pytest -q tests/test_sample.py")
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.result["returncode"] == 0 and call.result["errors"] == ""
    assert "1 passed" in call.result["output"]
    # Today's argument names before the seed's schema still work (path, pattern).
    old = tools.call("run_tests", path="tests/test_sample.py", pattern="one")
    assert old.status == ToolCall.Status.SUCCEEDED, old.result
    assert old.arguments == {"command": "pytest -q --tb=short tests/test_sample.py -k one"}


def test_run_tests_obeys_the_shell_blocklist(tools: Tools) -> None:
    configure("shell", sandbox_backend=tools.backend, blocked_commands=["pytest"])
    call = tools.call("run_tests")
    assert call.status == ToolCall.Status.DENIED
    assert call.error.startswith("policy: ") and "pytest" in call.error, call.error
    configure("shell", sandbox_backend=tools.backend, allowed_commands=["ls", "git"])
    call = tools.call("run_tests")
    assert call.status == ToolCall.Status.DENIED
    assert "pytest" in call.error, call.error


def test_run_tests_runs_only_the_test_commands_an_admin_allows(tools: Tools) -> None:
    _write(tools, "sub/test_sample.py", PASSING)
    for command in ("sh -c 'id'", "pytest -q; id", "pytest -q && rm -rf .", "pytest $(id)"):
        call = tools.call("run_tests", command=command)
        assert call.status == ToolCall.Status.DENIED, (command, call.result)
    assert tools.call("run_tests", cwd="../..").status == ToolCall.Status.DENIED
    inside = tools.call("run_tests", command="python3 -m pytest -q", cwd="sub")
    assert inside.status == ToolCall.Status.SUCCEEDED, inside.result
    assert "1 passed" in inside.result["output"]
    configure("dev", sandbox_backend=tools.backend, test_commands=["make test"])
    refused = tools.call("run_tests", command="pytest -q")
    assert refused.status == ToolCall.Status.DENIED
    assert "make test" in refused.error, refused.error


def test_git_status_initialises_a_repository(tools: Tools) -> None:
    call = tools.call("git_status")
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert (tools.workspace / ".git").is_dir()
    assert "initialised a git repository" in call.output
    assert call.result["stdout"].startswith("## No commits yet on main")


def test_git_add_and_commit_make_a_real_commit(tools: Tools) -> None:
    _write(tools, "src/app.py", "print('hi')\n")
    _write(tools, "notes.txt", "not staged\n")
    added = tools.call("git_add", files=["src/app.py"])
    assert added.status == ToolCall.Status.SUCCEEDED, added.result
    assert "A  src/app.py" in added.result["status"]
    assert "?? notes.txt" in added.result["status"]
    committed = tools.call("git_commit", message="Add the app")
    assert committed.status == ToolCall.Status.SUCCEEDED, committed.result
    assert re.fullmatch(r"[0-9a-f]{40}", committed.result["commit"])
    assert committed.result["subject"] == "Add the app"
    log = _host_git(tools, "log", "--format=%H|%an|%ae|%s")
    assert log == (
        f"{committed.result['commit']}|Control Center agent|agent@controlcenter.local|Add the app\n"
    )
    assert _host_git(tools, "show", "--name-only", "--format=", "HEAD") == "src/app.py\n"
    # Nothing staged: the commit fails and says so.
    again = tools.call("git_commit", message="Empty")
    assert again.status == ToolCall.Status.FAILED
    assert again.error == "git commit exited with status 1"


def test_git_add_refuses_paths_outside_the_workspace(tools: Tools) -> None:
    call = tools.call("git_add", files=["ok.txt", "../outside"])
    assert call.status == ToolCall.Status.DENIED, call.result


def test_search_code_finds_matches_and_reports_none(tools: Tools) -> None:
    _write(tools, "src/a.py", "import os\n\ndef needle():\n    return 1\n")
    _write(tools, "src/b.txt", "def needle in a text file\n")
    found = tools.call("search_code", pattern=r"def needle\(", glob="*.py")
    assert found.status == ToolCall.Status.SUCCEEDED, found.result
    assert found.result["matches"] == ["./src/a.py:3:def needle():"]
    assert found.result["count"] == 1
    nothing = tools.call("search_code", pattern="haystack", path="src")
    assert nothing.status == ToolCall.Status.SUCCEEDED, nothing.result
    assert nothing.result == {"success": True, "matches": [], "count": 0, **_timing(nothing)}


def _timing(call: ToolCall) -> dict[str, int]:
    return {"duration_ms": call.result["duration_ms"]}


def _same(a: ToolCall, b: ToolCall) -> None:
    assert a.status == b.status == ToolCall.Status.SUCCEEDED, (a.result, b.result)
    left = {k: v for k, v in a.result.items() if k != "duration_ms"}
    right = {k: v for k, v in b.result.items() if k != "duration_ms"}
    assert left == right


def test_the_dev_file_tools_are_the_file_activities(tools: Tools) -> None:
    written = tools.call("write_file", path="pkg/mod.py", content="x = 1\n")
    assert written.status == ToolCall.Status.SUCCEEDED, written.result
    assert written.result["path"] == "pkg/mod.py" and written.result["size_bytes"] == 6
    assert written.result["status"] == "written"
    assert written.output == "wrote 6 bytes to pkg/mod.py\n"
    assert (tools.workspace / "pkg" / "mod.py").read_text() == "x = 1\n"
    _same(tools.call("read_file", path="pkg/mod.py"), tools.call("file_read", path="pkg/mod.py"))
    _same(tools.call("list_directory", path="pkg"), tools.call("file_list", path="pkg"))
    deep = tools.call("list_directory", recursive=True)
    assert deep.status == ToolCall.Status.SUCCEEDED, deep.result
    assert {"path": "pkg/mod.py", "type": "file", "size": 6} in deep.result["entries"]


def test_the_dev_file_tools_obey_the_file_groups_settings(tools: Tools) -> None:
    use_backend(tools.backend, file={"allowed_paths": ["src"], "max_file_bytes": 100})
    assert tools.call("write_file", path="src/ok.py", content="x\n").status == "succeeded"
    for tool, args in (
        ("read_file", {"path": "README.md"}),
        ("write_file", {"path": "top.py", "content": "x\n"}),
        ("write_file", {"path": "src/big.py", "content": "x" * 101}),
        ("list_directory", {"path": "."}),
    ):
        call = tools.call(tool, **args)
        assert call.status == ToolCall.Status.DENIED, (tool, call.result)
    assert not (tools.workspace / "top.py").exists()
    # The dev group's own backend setting does not decide where the file activities run.
    configure("dev", sandbox_backend="none")
    call = tools.call("read_file", path="src/ok.py")
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.sandbox_id != "none" and not call.sandbox_id.startswith("none:")
