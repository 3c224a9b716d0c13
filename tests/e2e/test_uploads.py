"""A person puts files into the conversation's workspace from the chat page — the Attach
button, drag and drop, a pasted image — sends them with a message, and downloads one from the
Files panel; at the desktop and the phone size, in real Chromium against the real server."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from chat_app.models import Conversation
from chat_app.services.uploads import workspace_for
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.integration.test_images import PNG
from tests.llm_server import Reply

pytestmark = [pytest.mark.e2e]

DROP = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, { type: "text/csv" }));
  const target = document.getElementById("messages");
  for (const type of ["dragenter", "dragover", "drop"]) {
    const init = { bubbles: true, cancelable: true, dataTransfer: data };
    target.dispatchEvent(new DragEvent(type, init));
  }
}"""

PASTE = """(bytes) => {
  const data = new DataTransfer();
  data.items.add(new File([new Uint8Array(bytes)], "image.png", { type: "image/png" }));
  const input = document.getElementById("message-input");
  const init = { bubbles: true, cancelable: true, clipboardData: data };
  input.dispatchEvent(new ClipboardEvent("paste", init));
}"""


@pytest.mark.expect_http_errors  # the refused .exe answers 415
def test_a_person_uploads_by_button_drop_and_paste_and_downloads(page, user, llm, provider):
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    conversation = Conversation.objects.get(
        pk=page.locator("#chat").get_attribute("data-conversation-id")
    )
    shutil.rmtree(workspace_for(conversation))  # a clean panel (ids repeat between runs)
    chips = page.locator("#attachments .attachment")
    panel = page.locator("#files-panel")
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        tag = f"{width}"
        with page.expect_file_chooser() as chooser:
            page.get_by_role("button", name="Attach files").click()
        chooser.value.set_files(
            [{"name": f"notes-{tag}.md", "mimeType": "text/markdown", "buffer": b"# Notes\n"}]
        )
        expect(chips.filter(has_text=f"notes-{tag}.md")).to_be_visible()
        page.evaluate(DROP, [f"table-{tag}.csv", "a,b\n1,2\n"])
        expect(chips.filter(has_text=f"table-{tag}.csv")).to_be_visible()
        page.evaluate(PASTE, list(PNG))
        expect(chips.filter(has_text="pasted-")).to_be_visible()
        expect(chips).to_have_count(3)
        docs_shot(page, f"uploads-{tag}")
        # A type an admin did not allow: a clear error, nothing attached.
        with page.expect_file_chooser() as chooser:
            page.get_by_role("button", name="Attach files").click()
        chooser.value.set_files(
            [{"name": "tool.exe", "mimeType": "application/x", "buffer": b"MZ"}]
        )
        expect(page.locator("#composer-error")).to_contain_text(".exe files are not accepted")
        expect(chips).to_have_count(3)

        llm.script(Reply(text=f"I see three files ({tag})."))
        page.get_by_label("Message").fill("Here are my files.")
        page.keyboard.press("Enter")
        sent = page.locator(".message.role-user", has_text="Here are my files.").last
        expect(sent.locator(".message-files a")).to_have_count(3)
        expect(page.get_by_text(f"I see three files ({tag}).")).to_be_visible()
        expect(chips).to_have_count(0)
        expect(page.locator("#attachments")).to_be_hidden()

    # The Files panel lists everything, with sizes, and downloads.
    page.set_viewport_size({"width": 1280, "height": 800})
    for name in ("notes-1280.md", "table-1280.csv", "notes-390.md", "table-390.csv"):
        expect(panel.locator(".file-link", has_text=name).first).to_be_visible()
    link = panel.locator(".file-link", has_text="table-1280.csv").first
    with page.expect_download() as download:
        link.click()
    with open(download.value.path(), "rb") as handle:
        assert handle.read() == b"a,b\n1,2\n"
    expect(panel).to_contain_text("8 bytes")
    docs_shot(panel, "files-panel-1280")
    panel.get_by_role("button", name="Refresh the file list").click()
    expect(panel.locator(".file-link", has_text="notes-390.md").first).to_be_visible()
    page.screenshot(path="var/test-uploads-e2e.png", full_page=True)
