"""The Tools Manager's Test button for every Shell, File, Dev, HTTP and Time function, pressed
by an admin in real Chromium: each run goes through binding, Celery and the sandbox and
reaches "succeeded" in the page. (Browser and Docker: test_test_buttons.py.)"""

from __future__ import annotations

import subprocess

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tests.tools.browser.site import Request, Response, serving
from tests.tools_manager.test_test_buttons import edit_settings, run_test
from tools_app.models import ToolCall
from tools_app.registry import GROUPS
from tools_app.runtime import workspace_id_for

pytestmark = [pytest.mark.e2e]

HOST = "127.0.0.10"
COVERED_GROUPS = ("shell", "file", "dev", "http", "time")


def _csv(r: Request) -> Response:
    return 200, [("Content-Type", "text/csv")], b"a,b\n1,2\n3,4\n"


def test_every_sandboxed_function_passes_its_test_run(page, staff_user):
    login(page, "root", "root-password-1")
    with serving(HOST, {"/data.csv": _csv}) as site:
        run_test(page, "current_time", {"Timezone": "Asia/Tokyo"}, result=("Asia/Tokyo",))
        run_test(
            page, "shell_exec", {"Command": "echo hello from a test"}, result=("hello from a test",)
        )
        run_test(
            page,
            "file_write",
            {"Path": "notes/a.txt", "Content": "alpha\nbeta\n"},
            result=('"size_bytes": 11',),
        )
        run_test(page, "file_read", {"Path": "notes/a.txt"}, result=("alpha",))
        run_test(page, "file_list", {"Path": "notes"}, result=("notes/a.txt",))
        run_test(page, "file_delete", {"Path": "notes/a.txt"}, result=('"deleted": "file"',))

        run_test(page, "write_file", {"Path": "m.py", "Content": "def f():\n    return 1\n"})
        run_test(
            page,
            "write_file",
            {
                "Path": "test_m.py",
                "Content": "from m import f\n\ndef test_f():\n    assert f() == 1\n",
            },
        )
        run_test(page, "read_file", {"Path": "m.py"}, result=("return 1",))
        run_test(page, "list_directory", {}, result=("test_m.py",))
        run_test(page, "search_code", {"Pattern": "def f"}, result=("m.py:1:def f():",))
        run_test(page, "run_tests", {}, result=('"returncode": 0',))
        status = run_test(page, "git_status", {}, result=('"exit_code": 0',))
        expect(status.locator(".toolcall-output")).to_contain_text("on main")
        run_test(page, "git_add", {"Files": "m.py\ntest_m.py"}, result=("A  m.py",))
        run_test(page, "git_commit", {"Message": "Add f"}, result=('"subject": "Add f"',))

        edit_settings(page, "HTTP", {"Private allowed": HOST}, "private_allowed")
        card = run_test(
            page, "http_request", {"Url": site.url("/data.csv")}, result=('"status": 200',)
        )
        expect(card.locator(".toolcall-output")).to_contain_text("GET http://127.0.0.10")

    tested = set(ToolCall.objects.filter(source="test").values_list("tool", flat=True))
    every = {t.tool_name for g in COVERED_GROUPS for t in GROUPS[g].tools}
    assert every <= tested, f"not tested: {sorted(every - tested)}"
    assert not ToolCall.objects.filter(source="test").exclude(status="succeeded").exists()

    workspace = settings.WORKSPACES_DIR / workspace_id_for(
        conversation_id=None, user_id=staff_user.pk
    )
    log = subprocess.run(
        ["git", "-C", str(workspace), "-c", "safe.directory=*", "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout.split() == ["Add", "f"]
