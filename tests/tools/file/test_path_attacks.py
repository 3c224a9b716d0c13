"""Path attacks on the file tools (and the dev toolset's file tools), through the real path, on
the docker and bubblewrap backends.

Every case plants a canary (a unique secret, readable by the sandbox uid) outside the workspace
on the host, runs whatever the model could run first (``shell_exec``: symlinks, loops, FIFOs),
then the attack; the canary must never show up in the call's result, output or error, and
nothing outside the workspace may change. Odd names (percent-encoding, look-alike dots, overlong
UTF-8 written as text) are literal names: they must stay inside the workspace.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connection

from tests.tools.conftest import ISOLATED, Canary, Tools, call_text, make_tools, use_backend
from tools_app.models import ToolCall

on_isolated = pytest.mark.parametrize("backend", ISOLATED, indirect=True)

WRITTEN = "written-by-attack\n"
DENIED, MISSING, CREATED, OK = "denied", "missing", "created", "ok"
WRITERS = {"file_write", "write_file"}


@dataclass(frozen=True)
class Attack:
    tool: str
    path: str  # @SECRET@, @SIBLING@ and @HOST@ are filled in from the canary
    expect: str = DENIED
    setup: str = ""  # a shell line the model runs first (shell_exec, same sandbox)
    inside: str = ""  # CREATED/OK: the workspace file that must hold the result
    allowed: tuple[str, ...] = ()  # the File group's allowed_paths
    extra: dict[str, Any] = field(default_factory=dict)
    check: Callable[[ToolCall, Tools], None] | None = None


def _p(case_id: str, tool: str, path: str, expect: str = DENIED, **kw: Any) -> Any:
    return pytest.param(Attack(tool, path, expect, **kw), id=case_id)


def _no_descent(call: ToolCall, tools: Tools) -> None:
    paths = [e["path"] for e in call.result["entries"]]
    assert {"d/root", "d/up"} <= set(paths), paths
    assert not [p for p in paths if p.startswith(("d/root/", "d/up/"))], paths
    kinds = {e["path"]: e["type"] for e in call.result["entries"]}
    assert kinds["d/root"] == kinds["d/up"] == "symlink"


def _link_removed_only(call: ToolCall, tools: Tools) -> None:
    assert call.result["deleted"] == "symlink"
    assert not os.path.lexists(tools.workspace / "link")


def _still_a_link(call: ToolCall, tools: Tools) -> None:
    assert (tools.workspace / "link").is_symlink()


def _read(content: str) -> Callable[[ToolCall, Tools], None]:
    def check(call: ToolCall, tools: Tools) -> None:
        assert call.result["content"] == content

    return check


def _entries(*paths: str) -> Callable[[ToolCall, Tools], None]:
    def check(call: ToolCall, tools: Tools) -> None:
        assert [e["path"] for e in call.result["entries"]] == list(paths)

    return check


LEXICAL = [
    _p("read-dotdot", "file_read", "../secret.txt"),
    _p("read-dotdot-deep", "file_read", "../../../../../../../../etc/passwd"),
    _p("read-inner-dotdot", "file_read", "a/../../secret.txt"),
    _p("read-inner-dotdot-deep", "file_read", "a/b/c/../../../../secret.txt"),
    _p("read-dot-dotdot", "file_read", "./../secret.txt"),
    _p("read-doubled-slashes", "file_read", "..//..//secret.txt"),
    _p("read-trailing-dotdot-slash", "file_read", "a/../../"),
    _p("read-sibling-workspace", "file_read", "../@SIBLING@/secret.txt"),
    _p("read-abs-etc-passwd", "file_read", "/etc/passwd"),
    _p("read-abs-workspace-dotdot", "file_read", "/workspace/../etc/passwd"),
    _p("read-abs-double-slash", "file_read", "//etc/passwd"),
    _p("read-abs-workspace-inner-dotdot", "file_read", "/workspace/a/../../secret.txt"),
    _p("read-abs-workspace-prefix", "file_read", "/workspace-other/secret.txt"),
    _p("read-abs-proc-root", "file_read", "/proc/self/root/etc/passwd"),
    _p("read-abs-host-canary", "file_read", "@HOST@/secret.txt"),
    _p("read-tilde", "file_read", "~"),
    _p("read-tilde-slash", "file_read", "~/secret.txt"),
    _p("read-tilde-user", "file_read", "~root/.bashrc"),
    _p("read-nul", "file_read", "secret.txt\0.png"),
    _p("read-nul-dotdot", "file_read", "..\0/secret.txt"),
    _p("read-5000-chars", "file_read", "a/" * 2499 + "xx"),
    _p("read-300-char-component", "file_read", "x" * 300),
    _p("write-dotdot", "file_write", "../planted.txt"),
    _p("write-dotdot-over-canary", "file_write", "../secret.txt"),
    _p("write-abs-tmp", "file_write", "/tmp/planted.txt"),
    _p("write-sibling-workspace", "file_write", "../@SIBLING@/planted.txt"),
    _p("write-300-char-component", "file_write", "d/" + "y" * 300),
    _p("delete-dotdot", "file_delete", "../secret.txt"),
    _p("delete-abs", "file_delete", "@HOST@/secret.txt"),
    _p("delete-workspace-root", "file_delete", "."),
    _p("delete-workspace-root-abs", "file_delete", "/workspace"),
    _p("list-dotdot", "file_list", ".."),
    _p("list-root", "file_list", "/"),
    _p("list-sibling-workspace", "file_list", "../@SIBLING@"),
    _p("list-abs-double-slash", "file_list", "//etc"),
    _p("dev-read-dotdot", "read_file", "../secret.txt"),
    _p("dev-read-abs", "read_file", "/etc/passwd"),
    _p("dev-write-abs", "write_file", "/etc/cron.d/planted"),
    _p("dev-write-dotdot", "write_file", "../planted.txt"),
    _p("dev-list-dotdot-dotdot", "list_directory", "../.."),
]

LITERAL = [
    _p("read-percent-dots", "file_read", "%2e%2e/secret.txt", MISSING),
    _p("read-percent-slash", "file_read", "..%2fsecret.txt", MISSING),
    _p("read-double-percent", "file_read", "%252e%252e%252fsecret.txt", MISSING),
    _p("read-fullwidth-dots", "file_read", "．．/secret.txt", MISSING),
    _p("read-two-dot-leader", "file_read", "‥/secret.txt", MISSING),
    _p("read-overlong-utf8-as-text", "file_read", "%c0%ae%c0%ae/secret.txt", MISSING),
    _p("read-overlong-utf8-as-latin1", "file_read", "\u00c0\u00ae\u00c0\u00ae/secret.txt", MISSING),
    _p("read-backslash-dotdot", "file_read", "..\\secret.txt", MISSING),
    _p("read-three-dots", "file_read", ".../secret.txt", MISSING),
    _p("read-dotdot-space", "file_read", ".. /secret.txt", MISSING),
    _p("read-dotdot-newline", "file_read", "..\n/secret.txt", MISSING),
    _p("read-file-url", "file_read", "file:///etc/passwd", MISSING),
    _p("read-dollar-home", "file_read", "$HOME/../secret.txt", MISSING),
    _p("read-windows-path", "file_read", "C:\\Windows\\..\\..\\secret.txt", MISSING),
    _p(
        "write-fullwidth-dots", "file_write", "．．/planted.txt", CREATED, inside="．．/planted.txt"
    ),
    _p(
        "write-percent-dots",
        "file_write",
        "%2e%2e/planted.txt",
        CREATED,
        inside="%2e%2e/planted.txt",
    ),
    _p(
        "write-overlong-utf8-as-latin1",
        "file_write",
        "\u00c0\u00ae\u00c0\u00ae/planted.txt",
        CREATED,
        inside="\u00c0\u00ae\u00c0\u00ae/planted.txt",
    ),
    _p(
        "write-backslash-dotdot", "file_write", "..\\planted.txt", CREATED, inside="..\\planted.txt"
    ),
    _p("dev-write-fullwidth", "write_file", "．．/planted.txt", CREATED, inside="．．/planted.txt"),
    _p(
        # A name that is not UTF-8, made by the model's shell, reached through a symlink: the
        # answer names it, escaped, instead of breaking the call when it is stored.
        "read-via-link-to-non-utf8-name",
        "file_read",
        "x",
        OK,
        setup="echo inside > $'\\xff' && ln -s $'\\xff' x",
        check=_read("inside\n"),
    ),
    _p(
        "list-non-utf8-names",
        "file_list",
        "d",
        OK,
        setup="mkdir d && touch d/$'\\xff\\xfe' d/ok",
        check=_entries("d/ok", "d/\\xff\\xfe"),
    ),
]

SYMLINKS = [
    _p("symlink-file-abs", "file_read", "x", setup="ln -s /etc/passwd x"),
    _p("symlink-dir-dotdot", "file_read", "up/secret.txt", setup="ln -s .. up"),
    _p(
        "symlink-chain-relative",
        "file_read",
        "a/secret.txt",
        setup="mkdir -p d && ln -s ../.. d/b && ln -s d/b a",
    ),
    _p(
        "symlink-chain-a-b-c",
        "file_read",
        "a/secret.txt",
        setup="ln -s b a && ln -s c b && ln -s ../.. c",
    ),
    _p(
        "symlink-abs-workspace-dotdot",
        "file_read",
        "w/secret.txt",
        setup="ln -s /workspace/../.. w",
    ),
    _p("symlink-abs-workspace-file", "file_read", "p", setup="ln -s /workspace/../etc/passwd p"),
    _p("symlink-dangling-outside", "file_read", "dang", setup="ln -s /nonexistent/secret.txt dang"),
    _p(
        "symlink-deep-relative",
        "file_read",
        "a/b/up/secret.txt",
        setup="mkdir -p a/b && ln -s ../../.. a/b/up",
    ),
    _p("symlink-parent-root", "file_read", "root/etc/passwd", setup="ln -s / root"),
    _p("symlink-parent-root-list", "file_list", "root/etc", setup="ln -s / root"),
    _p("symlink-parent-root-list-link", "file_list", "root", setup="ln -s / root"),
    _p(
        "symlink-parent-tmp-read",
        "file_read",
        "t/secret.txt",
        setup="echo @SECRET@ > /tmp/secret.txt && ln -s /tmp t",
    ),
    _p("symlink-parent-tmp-write", "file_write", "t/planted.txt", setup="ln -s /tmp t"),
    _p("symlink-parent-host-dir", "file_read", "h/secret.txt", setup="ln -s @HOST@ h"),
    _p("symlink-parent-host-dir-write", "file_write", "h/planted.txt", setup="ln -s @HOST@ h"),
    _p("symlink-sibling-workspace", "file_read", "sib/secret.txt", setup="ln -s ../@SIBLING@ sib"),
    _p("symlink-proc-root", "file_read", "pr/etc/passwd", setup="ln -s /proc/self/root pr"),
    _p("symlink-proc-cwd-up", "file_read", "pc/secret.txt", setup="ln -s /proc/self/cwd/.. pc"),
    _p("symlink-loop-pair", "file_read", "l1", setup="ln -s l1 l2 && ln -s l2 l1"),
    _p("symlink-loop-self", "file_read", "self", setup="ln -s self self"),
    _p("symlink-loop-growing", "file_read", "loop/x", setup="ln -s loop/x loop"),
    _p("symlink-loop-write", "file_write", "l1", setup="ln -s l1 l2 && ln -s l2 l1"),
    _p(
        "symlink-chain-of-50",
        "file_read",
        "l0",
        setup="for i in $(seq 0 49); do ln -s l$((i+1)) l$i; done && echo hi > l50",
    ),
    _p("symlink-delete-through-parent", "file_delete", "e/passwd", setup="ln -s /etc e"),
    _p("symlink-write-dangling-outside", "file_write", "out", setup="ln -s ../planted.txt out"),
    _p(
        "symlink-delete-removes-only-the-link",
        "file_delete",
        "link",
        OK,
        setup="ln -s ../secret.txt link",
        check=_link_removed_only,
    ),
    _p(
        "symlink-write-through-inside-link",
        "file_write",
        "link",
        OK,
        setup="echo old > real.txt && ln -s real.txt link",
        inside="real.txt",
        check=_still_a_link,
    ),
    _p(
        "symlink-write-through-inside-dir-link",
        "file_write",
        "dl/new.txt",
        OK,
        setup="mkdir real && ln -s real dl",
        inside="real/new.txt",
    ),
    _p(
        "symlink-write-dangling-inside",
        "file_write",
        "dang",
        OK,
        setup="ln -s made.txt dang",
        inside="made.txt",
    ),
    _p(
        "symlink-read-abs-inside",
        "file_read",
        "link",
        OK,
        setup="echo inside > real.txt && ln -s /workspace/real.txt link",
        check=_read("inside\n"),
    ),
    _p(
        "symlink-list-recursive-does-not-follow",
        "file_list",
        ".",
        OK,
        setup="mkdir d && ln -s / d/root && ln -s .. d/up",
        extra={"recursive": True},
        check=_no_descent,
    ),
    _p("dev-read-symlink-abs", "read_file", "x", setup="ln -s /etc/passwd x"),
    _p("dev-write-symlink-parent", "write_file", "t/planted.txt", setup="ln -s /tmp t"),
    _p("dev-list-symlink-parent", "list_directory", "root", setup="ln -s / root"),
]

_TREE = "mkdir -p src other && echo top > top.txt && echo ok > src/ok.txt"
ALLOWED_PATHS = [
    _p("allowed-dotdot", "file_read", "src/../top.txt", allowed=("src",), setup=_TREE),
    _p("allowed-outside", "file_read", "top.txt", allowed=("src",), setup=_TREE),
    _p("allowed-prefix-lookalike", "file_read", "srcx/a.txt", allowed=("src",), setup=_TREE),
    _p(
        "allowed-symlink-file-out",
        "file_read",
        "src/link",
        allowed=("src",),
        setup=_TREE + " && ln -s ../top.txt src/link",
    ),
    _p(
        "allowed-symlink-dir-out",
        "file_list",
        "src/o",
        allowed=("src",),
        setup=_TREE + " && ln -s ../other src/o",
    ),
    _p(
        "allowed-symlink-up",
        "file_read",
        "src/up/top.txt",
        allowed=("src",),
        setup=_TREE + " && ln -s .. src/up",
    ),
    _p(
        "allowed-symlink-abs",
        "file_read",
        "src/abs",
        allowed=("src",),
        setup=_TREE + " && ln -s /workspace/top.txt src/abs",
    ),
    _p(
        "allowed-write-through-symlink",
        "file_write",
        "src/o/x.txt",
        allowed=("src",),
        setup=_TREE + " && ln -s ../other src/o",
    ),
    _p(
        "allowed-read-inside",
        "file_read",
        "src/ok.txt",
        OK,
        allowed=("src",),
        setup=_TREE,
        check=_read("ok\n"),
    ),
    _p("allowed-dev-read", "read_file", "top.txt", allowed=("src",), setup=_TREE),
    _p("allowed-dev-list", "list_directory", ".", allowed=("src",), setup=_TREE),
    _p("allowed-dev-write", "write_file", "other/x.txt", allowed=("src",), setup=_TREE),
]


def _arguments(attack: Attack, canary: Canary) -> dict[str, Any]:
    args: dict[str, Any] = {"path": canary.expand(attack.path), **attack.extra}
    if attack.tool in WRITERS:
        args["content"] = WRITTEN
    return args


def _prepare(attack: Attack, tools: Tools, canary: Canary) -> None:
    if attack.allowed:
        use_backend(tools.backend, file={"allowed_paths": list(attack.allowed)})
    if attack.setup:
        tools.sh(canary.expand(attack.setup))


def _judge(attack: Attack, call: ToolCall, tools: Tools) -> None:
    status, error = call.status, call.error
    if attack.expect == DENIED:
        assert status == ToolCall.Status.DENIED, (status, error, call.result)
        assert error.startswith("policy: ")
        assert call.result == {"success": False, "error": error, **_timing(call)}
    elif attack.expect == MISSING:
        assert status == ToolCall.Status.FAILED, (status, error, call.result)
        assert "does not exist" in error
    else:
        assert status == ToolCall.Status.SUCCEEDED, (status, error, call.result)
        if attack.expect == CREATED or (attack.tool in WRITERS and attack.inside):
            assert (tools.workspace / attack.inside).read_text() == WRITTEN
        if attack.check is not None:
            attack.check(call, tools)


def _timing(call: ToolCall) -> dict[str, Any]:
    # Calls that reached execution carry their duration; refusals at binding do not.
    return {"duration_ms": call.result["duration_ms"]} if "duration_ms" in call.result else {}


@on_isolated
@pytest.mark.parametrize("attack", [*LEXICAL, *LITERAL, *SYMLINKS, *ALLOWED_PATHS])
def test_it_keeps_the_model_inside_the_workspace(
    attack: Attack, tools: Tools, canary: Canary
) -> None:
    _prepare(attack, tools, canary)
    call = tools.call(attack.tool, **_arguments(attack, canary))
    canary.assert_safe(call)
    _judge(attack, call, tools)


# One case per kind of lexical escape, for the layer under binding.
UNCHECKED = {
    "read-dotdot",
    "read-inner-dotdot-deep",
    "read-sibling-workspace",
    "read-abs-etc-passwd",
    "read-abs-workspace-dotdot",
    "read-abs-workspace-prefix",
    "read-abs-host-canary",
    "read-tilde-slash",
    "read-nul-dotdot",
    "read-5000-chars",
    "read-300-char-component",
    "write-dotdot-over-canary",
    "write-sibling-workspace",
    "delete-dotdot",
    "delete-workspace-root",
    "list-dotdot",
    "dev-write-abs",
}


@on_isolated
@pytest.mark.parametrize("attack", [p for p in LEXICAL if p.id in UNCHECKED])
def test_the_sandbox_holds_when_binding_misses(
    attack: Attack, tools: Tools, canary: Canary
) -> None:
    """The same lexical attacks, executed as if policy had let them through: the helper in the
    sandbox refuses them (or finds nothing) on its own."""
    call = tools.call_unchecked(attack.tool, **_arguments(attack, canary))
    canary.assert_safe(call)
    assert call.status in (ToolCall.Status.DENIED, ToolCall.Status.FAILED), call.result


@pytest.mark.modes
@pytest.mark.parametrize("backend", ["bubblewrap"], indirect=True)
def test_a_name_that_is_not_utf8_is_stored_and_shown(tools: Tools, canary: Canary) -> None:
    """JSON lets the model send lone surrogates; Python turns "\\udcc0\\udcae" into the raw
    bytes C0 AE (an overlong '.') when it touches the filesystem, which the kernel takes as a
    literal name. The call must stay inside the workspace, and be stored and finish in every
    mode (PostgreSQL's jsonb refuses lone surrogates; SQLite takes them)."""
    call = tools.call("file_write", path="\udcc0\udcae/planted.txt", content=WRITTEN)
    canary.assert_safe(call)
    assert call.status in ToolCall.TERMINAL, call.status
    if call.status == ToolCall.Status.SUCCEEDED:
        assert call.result["path"] == "\\xc0\\xae/planted.txt"
        assert (tools.workspace / "\udcc0\udcae" / "planted.txt").read_text() == WRITTEN
    else:  # refused at binding, which is fine too
        assert "Unicode" in call.error, call.error


# -- special files, hard links, races ---------------------------------------------------------


@on_isolated
def test_it_refuses_a_fifo_without_hanging(tools: Tools, canary: Canary) -> None:
    """A FIFO the model made must not block the helper until the timeout (a read open() on a
    FIFO waits for a writer that never comes)."""
    use_backend(tools.backend, file={"timeout_seconds": 5})
    tools.sh("mkfifo f")
    for tool, extra in (("file_read", {}), ("file_write", {"content": WRITTEN})):
        started = time.monotonic()
        call = tools.call(tool, path="f", **extra)
        elapsed = time.monotonic() - started
        assert call.status == ToolCall.Status.FAILED, (tool, call.error)
        assert "not a regular file" in call.error, (tool, call.error)
        assert elapsed < 3, f"{tool} on a FIFO took {elapsed:.1f} s"
    canary.assert_safe(call)


@on_isolated
def test_it_cannot_create_a_hard_link_to_a_file_outside(tools: Tools, canary: Canary) -> None:
    """Inside docker/bubblewrap nothing of the host is visible to link to, and what is visible
    (the image, the host's read-only /usr) is another mount, so link() fails."""
    victims = ["/etc/passwd", "/usr/bin/env", "../secret.txt", str(canary.host_dir / "secret.txt")]
    for i, target in enumerate(victims):
        call = tools.call("shell_exec", command=f"ln {target} hl{i}")
        assert call.status == ToolCall.Status.FAILED, (target, call.result)
        assert call.result["exit_code"] != 0
        assert not os.path.lexists(tools.workspace / f"hl{i}")
    canary.assert_safe(call)


@on_isolated
def test_it_refuses_a_hard_link_planted_from_outside(
    tools: Tools, canary: Canary, owner: Any
) -> None:
    """A hard link to a host file inside the workspace (made with the ``none`` backend: the
    only place one can be made) is refused by every backend, and writing through it must not
    touch the outside file."""
    # Writable by the sandbox uid: only the hard-link check stands between it and the host.
    (canary.workspaces / "secret.txt").chmod(0o666)
    host = make_tools(owner, "none")
    use_backend("none")
    made = host.call("shell_exec", command="ln ../secret.txt hl")
    assert made.status == ToolCall.Status.SUCCEEDED, made.result
    assert (host.workspace / "hl").stat().st_nlink == 2
    # The same link, now seen from the isolated backend's own workspace.
    os.link(canary.workspaces / "secret.txt", tools.workspace / "hl")
    calls = []
    for backend, owner in (("none", host), (tools.backend, tools)):
        use_backend(backend)
        for tool, extra in (
            ("file_read", {}),
            ("read_file", {}),
            ("file_write", {"content": WRITTEN}),
            ("file_write", {"content": WRITTEN, "mode": "append"}),
        ):
            call = owner.call(tool, path="hl", **extra)
            calls.append(call)
            assert call.status == ToolCall.Status.DENIED, (backend, tool, call.result)
            assert "hard-linked" in call.error
            canary.assert_safe(call)
    canary.assert_safe(*calls)


# Exchanges two names atomically (renameat2 RENAME_EXCHANGE), as fast as it can, in its own
# process (a thread would fight the test for the GIL), until it is told to stop; prints the count.
SWAPPER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
names = [os.fsencode(n) for n in sys.argv[1:]]
sub, links = names[0], names[1:]
count = 0
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
while not stop:
    for link in links:
        for _ in range(2):
            if libc.renameat2(-100, sub, -100, link, 2) != 0:
                sys.exit(f"renameat2: {os.strerror(ctypes.get_errno())}")
            count += 1
print(count)
"""


@pytest.mark.parametrize("backend", [*ISOLATED, "none"], indirect=True)
def test_it_survives_a_directory_swapped_for_a_symlink(
    transactional_db: None, tools: Tools, canary: Canary
) -> None:
    """A host process atomically exchanges ``sub`` (a real directory) with symlinks to
    directories outside (/etc, and a host directory holding the canary) while file_read reads
    ``sub/passwd`` 200 times: every answer is the inside file or a refusal, never an outside
    one. With ``none`` both targets are the real host's; in docker/bubblewrap /etc is the
    sandbox's own (its passwd is still outside the workspace)."""
    ws = tools.workspace
    outside = canary.plant_dir("swap")
    (ws / "sub").mkdir(mode=0o755)
    (ws / "sub" / "passwd").write_text("inside\n")
    (ws / "sub" / "passwd").chmod(0o644)
    (ws / "to-etc").symlink_to("/etc")
    (ws / "to-host").symlink_to(os.path.relpath(outside, ws))
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, "sub", "to-etc", "to-host"],
        cwd=ws,
        stdout=subprocess.PIPE,
        text=True,
        # Lowest priority: it swaps with whatever CPU the reads leave, not against them.
        preexec_fn=lambda: os.nice(19),  # noqa: PLW1509
    )

    def read(_: int) -> tuple[str, str]:
        try:
            call = tools.call("file_read", path="sub/passwd")
            text = call_text(call)
            assert canary.secret not in text and "root:x:0:0" not in text, text
            if call.status == ToolCall.Status.SUCCEEDED:
                assert call.result["content"] == "inside\n", call.result
                return call.status, ""
            return call.status, call.error
        finally:
            connection.close()

    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            outcomes = Counter(pool.map(read, range(200)))
    finally:
        swapper.terminate()
        out, _ = swapper.communicate(timeout=10)
    assert swapper.returncode == 0, out
    assert int(out) > 1000, out
    # The race was real: the walk saw the directory and, at other times, a symlink.
    assert outcomes[(ToolCall.Status.SUCCEEDED, "")] > 0, outcomes
    assert len(outcomes) > 1, outcomes
    canary.assert_safe()
