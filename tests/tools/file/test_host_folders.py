"""Host folders an admin grants to the file tools (seed 003: "Allowed paths: /home/goclaw,
/tmp"): mounted into the sandbox at /mnt/<name>, read-only unless granted rw, never written
through a link; and the attacks beside them (traversal, links, absolute paths, a folder not
granted, a read-only mount written from the shell), on the docker and bubblewrap backends."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.tools.conftest import ISOLATED, SANDBOX_UID, Tools, call_text, configure
from tools_app.executors.file.settings import FileSettings
from tools_app.models import ToolCall
from tools_app.sandbox import ExecRequest, get_sandbox
from tools_app.sandbox.base import Mount

pytestmark = pytest.mark.parametrize("backend", ISOLATED, indirect=True)

SECRET = f"host-secret-{uuid.uuid4().hex}"


@pytest.fixture
def folders(tools: Tools):
    """Two granted folders (manuals read-only, drop rw) and an ungranted one holding a
    secret, outside the app's own state, readable by the sandbox uid."""
    top = Path(tempfile.mkdtemp(prefix="cc-host-folders-", dir="/tmp"))
    top.chmod(0o755)
    manuals, drop, private = top / "manuals", top / "drop", top / "private"
    for folder in (manuals, drop, private):
        folder.mkdir()
        folder.chmod(0o755)
    (manuals / "guide").mkdir()
    (manuals / "guide" / "start.md").write_text("# Start\nPress the green button.\n")
    (private / "secret.txt").write_text(SECRET + "\n")
    for path in (manuals / "guide", manuals / "guide" / "start.md", private / "secret.txt"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    os.chown(drop, SANDBOX_UID, SANDBOX_UID)
    configure(
        "file",
        sandbox_backend=tools.backend,
        host_folders=[f"manuals={manuals}", f"drop={drop} rw"],
    )
    yield manuals, drop, private
    shutil.rmtree(top, ignore_errors=True)


def test_it_reads_and_lists_a_read_only_host_folder(tools, folders):
    read = tools.call("file_read", path="/mnt/manuals/guide/start.md")
    assert read.status == ToolCall.Status.SUCCEEDED, read.result
    assert read.result["content"] == "# Start\nPress the green button.\n"
    assert read.result["path"] == "/mnt/manuals/guide/start.md"
    granted = tools.call("file_list", path="/mnt")
    assert [(e["path"], e["writable"]) for e in granted.result["entries"]] == [
        ("/mnt/drop", True),
        ("/mnt/manuals", False),
    ]
    deep = tools.call("list_directory", path="/mnt/manuals", recursive=True)
    assert deep.status == ToolCall.Status.SUCCEEDED, deep.result
    assert [e["path"] for e in deep.result["entries"]] == [
        "/mnt/manuals/guide",
        "/mnt/manuals/guide/start.md",
    ]


def test_it_writes_only_where_an_admin_granted_rw(tools, folders):
    manuals, drop, _ = folders
    written = tools.call("file_write", path="/mnt/drop/out/report.txt", content="done\n")
    assert written.status == ToolCall.Status.SUCCEEDED, written.result
    assert (drop / "out" / "report.txt").read_text() == "done\n"
    tools.call("file_write", path="/mnt/drop/out/report.txt", content="more\n", mode="append")
    assert (drop / "out" / "report.txt").read_text() == "done\nmore\n"
    refused = tools.call("file_write", path="/mnt/manuals/new.md", content="x")
    assert refused.status == ToolCall.Status.DENIED
    assert refused.error == "policy: host folder /mnt/manuals is read-only"
    assert tools.call("file_delete", path="/mnt/manuals/guide/start.md").status == "denied"
    # Policy missed it? The helper refuses too, and the mount is read-only anyway.
    unchecked = tools.call_unchecked("file_write", path="/mnt/manuals/new.md", content="x")
    assert unchecked.status == ToolCall.Status.DENIED and "read-only" in unchecked.error
    assert not (manuals / "new.md").exists()


def test_the_read_only_mount_holds_against_the_shell_too(tools, folders):
    manuals, _, _ = folders
    box = get_sandbox(tools.backend)
    result = box.exec(
        tools.workspace_id,
        tools.workspace,
        ExecRequest(
            ["sh", "-c", "echo x > /mnt/manuals/planted; cat /mnt/manuals/guide/start.md"],
            mounts=(Mount(manuals, "/mnt/manuals", writable=False),),
        ),
    )
    assert "Press the green button." in result.stdout
    assert "Read-only file system" in result.stderr, result.stderr
    assert not (manuals / "planted").exists()


@pytest.mark.parametrize(
    "tool, path",
    [
        ("file_read", "/mnt/manuals/../private/secret.txt"),
        ("file_read", "/mnt/manuals/../../etc/passwd"),
        ("file_read", "/mnt/private/secret.txt"),  # not granted
        ("file_read", "/mnt/manualsX/guide/start.md"),
        ("file_list", "/mnt/../tmp"),
        ("read_file", "/etc/passwd"),
        ("file_write", "/mnt/drop/../manuals/x.md"),
        ("file_write", "/mnt/private/x.md"),
        ("file_delete", "/mnt/drop"),
    ],
)
def test_paths_that_leave_a_granted_folder_are_refused(tools, folders, tool, path):
    args = {"path": path, **({"content": "x"} if tool == "file_write" else {})}
    call = tools.call(tool, **args)
    assert call.status in (ToolCall.Status.DENIED, ToolCall.Status.FAILED), call.result
    assert call.status == ToolCall.Status.DENIED or tool == "file_delete", call.error
    assert SECRET not in call_text(call)


def test_links_never_lead_out_of_a_host_folder_nor_get_written_through(tools, folders):
    manuals, drop, private = folders
    (drop / "inside.txt").write_text("kept\n")
    os.chown(drop / "inside.txt", SANDBOX_UID, SANDBOX_UID)
    links = {
        drop / "to-secret": private / "secret.txt",  # absolute, out of the folder
        drop / "up": Path("../private/secret.txt"),  # relative, out of the folder
        drop / "to-inside": Path("inside.txt"),  # relative, inside: readable, not writable
        manuals / "to-drop": Path("/mnt/drop/inside.txt"),  # into another folder
    }
    for link, target in links.items():
        link.symlink_to(target)
    for name in ("to-secret", "up"):
        for tool, extra in (("file_read", {}), ("file_write", {"content": "pwned"})):
            call = tools.call_unchecked(tool, path=f"/mnt/drop/{name}", **extra)
            assert call.status == ToolCall.Status.DENIED, (tool, name, call.result)
            assert SECRET not in call_text(call)
    inside = tools.call("file_read", path="/mnt/drop/to-inside")
    assert inside.status == ToolCall.Status.SUCCEEDED and inside.result["content"] == "kept\n"
    through = tools.call("file_write", path="/mnt/drop/to-inside", content="pwned")
    assert through.status == ToolCall.Status.DENIED
    assert "nothing is written through a link in a host folder" in through.error
    assert tools.call("file_read", path="/mnt/manuals/to-drop").status == "denied"
    # A link in the workspace never reaches a host folder either.
    tools.sh("ln -s /mnt/drop/inside.txt ws-link && ln -s /mnt/drop ws-dir")
    for path in ("ws-link", "ws-dir/inside.txt"):
        call = tools.call("file_write", path=path, content="pwned")
        assert call.status == ToolCall.Status.DENIED, call.result
    assert (drop / "inside.txt").read_text() == "kept\n"
    assert (private / "secret.txt").read_text() == SECRET + "\n"


def test_only_safe_folders_can_be_granted(backend, tmp_path):
    from django.conf import settings

    bad = [
        ["root=/"],
        ["proc=/proc/self"],
        ["sock=/var/run"],
        ["state=" + str(Path(settings.VAR_DIR).resolve())],
        ["ws=" + str(Path(settings.WORKSPACES_DIR).resolve() / "c1")],
        ["rel=relative/path"],
        ["a=/srv/a", "a=/srv/b"],
        ["bad name=/srv/a"],
        ["dots=/srv/../etc"],
    ]
    for entries in bad:
        with pytest.raises(ValidationError):
            FileSettings.model_validate({"host_folders": entries})
    ok = FileSettings.model_validate({"host_folders": ["docs=/srv/docs ro", "out=/srv/out  rw"]})
    assert ok.host_folders == ["docs=/srv/docs", "out=/srv/out rw"]
