"""An approval preview in real Chromium (issue 36): a file_write waiting for the requester's
confirmation shows, on its card, the diff against the file in the workspace — coloured,
escaped, readable at 390 px in light and dark — follows the arguments as they are edited,
and the call runs once approved."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from chat_app.models import Conversation
from chat_app.services.uploads import workspace_for
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall, ToolFunctionConfig

pytestmark = [pytest.mark.e2e]

OLD = "# Release notes\n\n- fixed the login page\n- faster search\n"
NEW = "# Release notes\n\n- fixed the login page\n- much faster search <b>2×</b>\n- dark mode\n"


def test_a_file_write_waits_with_its_diff_and_runs_once_confirmed(page, user, llm, provider):
    ToolFunctionConfig.objects.create(name="file_write", approval_mode="requester")
    llm.script(
        Reply(calls=[Call("file_write", {"path": "NOTES.md", "content": NEW})]),
        Reply(text="Updated the notes."),
    )
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    conversation = Conversation.objects.get(
        pk=page.locator("#chat").get_attribute("data-conversation-id")
    )
    workspace = workspace_for(conversation)
    shutil.rmtree(workspace)
    workspace = workspace_for(conversation)
    workspace.chmod(0o777)  # the sandbox user writes it when the call runs
    (workspace / "NOTES.md").write_text(OLD)
    (workspace / "NOTES.md").chmod(0o666)

    page.get_by_label("Message").fill("Update the release notes")
    page.get_by_role("button", name="Send").click()
    card = page.locator(".toolcall", has=page.locator(".tool-name", has_text="file_write"))
    diff = card.locator(".approval-diff")
    expect(diff).to_be_visible()
    expect(card.locator(".preview-title")).to_contain_text("Changes to NOTES.md")
    expect(card.locator(".diff-stat")).to_have_text("+2 −1")
    expect(diff.locator(".diff-del")).to_have_text(["-- faster search"])
    expect(diff.locator(".diff-add")).to_have_text(
        ["+- much faster search <b>2×</b>", "+- dark mode"]
    )
    assert card.locator(".approval-diff b").count() == 0  # the content is text, not markup
    # Added and removed lines are told apart by colour, in both themes.
    colours = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width, height in ((1280, 860), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            card.scroll_into_view_if_needed()
            docs_shot(card, f"approval-preview-{width}-{scheme}")
        colours[scheme] = (
            diff.locator(".diff-add").first.evaluate("el => getComputedStyle(el).backgroundColor"),
            diff.locator(".diff-del").first.evaluate("el => getComputedStyle(el).backgroundColor"),
        )
        # Nothing sticks out of a phone's width.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert colours["light"][0] != colours["light"][1]
    assert colours["dark"] != colours["light"]
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 860})

    # Edited arguments: the preview follows before anything is decided.
    card.locator(".approval-edit summary").click()
    card.get_by_label("Arguments (JSON)").fill('{"path": "OTHER.md", "content": "fresh\\n"}')
    expect(card.locator(".preview-title")).to_contain_text("New file OTHER.md")
    expect(card.locator(".diff-add")).to_have_text(["+fresh"])
    card.get_by_label("Arguments (JSON)").fill('{"path": "../../etc/passwd", "content": "x"}')
    expect(card.locator(".preview-none")).to_have_text(
        "no preview: policy: '../../etc/passwd' leaves the workspace"
    )
    # The call's own arguments, approved: it runs and the file is what the diff showed.
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".status-word")).to_have_text("succeeded")
    expect(page.get_by_text("Updated the notes.")).to_be_visible()
    assert (workspace / "NOTES.md").read_text() == NEW
    assert ToolCall.objects.get(tool="file_write").status == "succeeded"
