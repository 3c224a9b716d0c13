"""What a hostile path could do to docs_read: nothing outside the documentation folders is
read, whatever the spelling (.., absolute, links, encodings, NUL)."""

from __future__ import annotations

import os

import pytest

from tests.tools.calls import run_tool
from tests.tools.conftest import configure

pytestmark = [pytest.mark.django_db(transaction=True)]

SECRET = "TOP-SECRET-CONTENT"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "secret.md").write_text(SECRET)
    root = tmp_path / "manuals"
    (root / "sub").mkdir(parents=True)
    (root / "ok.md").write_text("# Fine\n")
    configure("docs", folders=[f"manuals={root}"])
    return root


def leaked(call) -> bool:
    return SECRET in str(call.result)


@pytest.mark.parametrize(
    "path",
    [
        "manuals/../secret.md",
        "manuals/sub/../../secret.md",
        "../secret.md",
        "manuals//../secret.md",
        "/etc/passwd",
        "manuals//etc/passwd",
        "manuals/~/secret.md",
    ],
)
def test_it_refuses_paths_that_leave_the_folder(user, folder, path):
    call = run_tool("docs_read", user=user, path=path)
    assert call.status in ("denied", "failed")
    assert not leaked(call)


def test_dot_dot_and_absolute_paths_are_denied_at_binding(user, folder):
    call = run_tool("docs_read", user=user, path="manuals/../secret.md")
    assert call.status == "denied" and "contains '..'" in call.error
    call = run_tool("docs_read", user=user, path="manuals//etc/passwd")
    assert call.status == "denied" and "absolute path" in call.error


@pytest.mark.parametrize(
    "path",
    [
        "manuals/%2e%2e/secret.md",
        "manuals/%2e%2e%2fsecret.md",
        "manuals/..%2fsecret.md",
        "manuals/..\\secret.md",
        "manuals/\uff0e\uff0e/secret.md",  # full-width dots
        "manuals/sub/..%c0%afsecret.md",
    ],
)
def test_encoded_tricks_are_only_file_names(user, folder, path):
    call = run_tool("docs_read", user=user, path=path)
    assert call.status == "failed" and "does not exist" in call.error
    assert not leaked(call)


def test_a_nul_byte_is_refused(user, folder):
    call = run_tool("docs_read", user=user, path="manuals/ok.md\x00.png")
    assert call.status in ("denied", "failed") and not leaked(call)


def test_a_symlinked_file_pointing_out_is_refused(user, folder):
    (folder / "link.md").symlink_to(folder.parent / "secret.md")
    call = run_tool("docs_read", user=user, path="manuals/link.md")
    assert call.status == "denied" and "symbolic link" in call.error
    assert not leaked(call)


def test_a_symlinked_folder_pointing_out_is_refused(user, folder):
    (folder / "escape").symlink_to(folder.parent)
    call = run_tool("docs_read", user=user, path="manuals/escape/secret.md")
    assert call.status == "denied" and "symbolic link" in call.error
    assert not leaked(call)


def test_links_are_not_listed_or_indexed(user, folder):
    (folder / "link.md").symlink_to(folder.parent / "secret.md")
    (folder / "escape").symlink_to(folder.parent)
    listed = run_tool("docs_list", user=user)
    assert "link.md" not in str(listed.result) and "escape" not in str(listed.result)
    found = run_tool("docs_search", user=user, query="TOP SECRET CONTENT")
    assert found.status == "succeeded" and not leaked(found)


def test_a_hard_link_to_an_outside_file_is_refused(user, folder):
    os.link(folder.parent / "secret.md", folder / "hard.md")
    call = run_tool("docs_read", user=user, path="manuals/hard.md")
    assert call.status == "denied" and "hard-linked" in call.error
    assert not leaked(call)


def test_a_fifo_does_not_hang_the_call(user, folder):
    os.mkfifo(folder / "pipe.md")
    call = run_tool("docs_read", user=user, path="manuals/pipe.md")
    assert call.status == "failed" and "not a regular file" in call.error
