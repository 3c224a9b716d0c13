"""A person using the chat page in real Chromium, against the real server and worker."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat_app.models import Conversation
from tests.e2e.conftest import login, wait_connected
from tests.llm_server import Call, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.modes]


def card(page, tool: str):
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def test_a_person_chats_and_watches_a_tool_call(page, user, llm, provider):
    llm.script(
        Reply(
            text="Let me look at the clock.",
            chunk_delay=0.02,
            calls=[Call("current_time", {"timezone": "Europe/Paris"})],
        ),
        Reply(text="In Paris it is **evening**.", chunk_delay=0.02),
    )
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill("What time is it in Paris?")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_text("Let me look at the clock.")).to_be_visible()
    tool_card = card(page, "current_time")
    expect(tool_card.locator(".status-word")).to_have_text("succeeded")
    expect(tool_card.locator(".toolcall-args")).to_contain_text("Europe/Paris")
    expect(page.locator(".markdown strong", has_text="evening")).to_be_visible()
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    page.screenshot(path="var/test-chat.png", full_page=True)


def test_a_reload_mid_turn_keeps_streaming(page, user, llm, provider):
    llm.script(Reply(text=" ".join(f"word{i}" for i in range(120)), chunk_delay=0.03, chunk_size=6))
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill("Count for me")
    page.keyboard.press("Enter")
    expect(page.locator(".stream-text")).to_contain_text("word5")
    page.reload()
    wait_connected(page)
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(page.locator(".message.role-assistant .markdown")).to_contain_text(
        "word119", timeout=20_000
    )
    text = page.locator(".message.role-assistant .markdown").inner_text()
    assert text.count("word60") == 1 and "word0" in text  # nothing lost, nothing doubled


def test_stop_cancels_a_running_turn(page, user, llm, provider):
    llm.script(Reply(text="blah " * 500, chunk_delay=0.03, chunk_size=5))
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill("Talk forever")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".stream-text")).to_contain_text("blah")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".message.role-assistant .tag", has_text="stopped")).to_be_visible()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()


def test_slash_command_works_with_no_provider(page, user):
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    expect(page.locator("#no-provider-banner")).to_contain_text("No LLM provider is configured")
    page.get_by_label("Message").fill('/current_time {"timezone": "UTC"}')
    page.keyboard.press("Enter")
    expect(card(page, "current_time").locator(".status-word")).to_have_text("succeeded")
    # The card says succeeded a moment before the turn's end arrives (distributed: another
    # event through Redis); until then Enter queues the text (it goes out at the turn's end).
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    page.get_by_label("Message").fill("hello?")
    page.keyboard.press("Enter")
    expect(page.locator(".message.role-notice")).to_contain_text("No LLM provider is configured")


def test_enter_during_a_turn_sends_the_message_when_the_turn_ends(page, user, llm, provider):
    llm.script(
        Reply(text="tick " * 120, chunk_delay=0.03, chunk_size=5),
        Reply(text="The second answer."),
    )
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill("Count slowly")
    page.keyboard.press("Enter")
    expect(page.locator(".stream-text")).to_contain_text("tick")
    page.get_by_label("Message").fill("And then this")
    page.keyboard.press("Enter")
    expect(page.locator("#composer-error")).to_contain_text("Sends when the agent finishes")
    expect(page.get_by_label("Message")).to_have_value("And then this")  # kept, not lost
    page.screenshot(path="var/test-chat-queued.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(400)  # the sidebar's slide to a drawer, for the picture
    page.screenshot(path="var/test-chat-queued-390-dark.png")
    expect(page.locator(".message.role-user", has_text="And then this")).to_be_visible(
        timeout=15_000
    )
    expect(page.get_by_text("The second answer.")).to_be_visible()
    expect(page.get_by_label("Message")).to_have_value("")
    expect(page.locator("#composer-error")).to_have_text("")

    # Queued, then the box emptied: nothing is sent when the turn ends.
    llm.script(Reply(text="tock " * 40, chunk_delay=0.03, chunk_size=5))
    page.get_by_label("Message").fill("Count again")
    page.keyboard.press("Enter")
    expect(page.locator(".stream-text").last).to_contain_text("tock")
    page.get_by_label("Message").fill("changed my mind")
    page.keyboard.press("Enter")
    page.get_by_label("Message").fill("")
    expect(page.locator("#composer-error")).to_have_text("")
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=15_000)
    expect(page.locator(".message.role-user", has_text="changed my mind")).to_have_count(0)

    # Queued, then Stop: the turn ends at once and the message goes out.
    llm.script(
        Reply(text="tack " * 200, chunk_delay=0.03, chunk_size=5),
        Reply(text="Stopped, then answered."),
    )
    page.get_by_label("Message").fill("Count once more")
    page.keyboard.press("Enter")
    expect(page.locator(".stream-text").last).to_contain_text("tack")
    page.get_by_label("Message").fill("Now this instead")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".message.role-user", has_text="Now this instead")).to_be_visible()
    expect(page.get_by_text("Stopped, then answered.")).to_be_visible(timeout=15_000)


@pytest.mark.expect_http_errors
def test_another_user_cannot_open_my_conversation(page, user, other_user):
    mine = Conversation.objects.create(owner=user, title="Secret plans")
    login(page, "bob", "bob-password-1")
    response = page.goto(f"/c/{mine.pk}/")
    assert response.status == 404
    expect(page.get_by_text("Secret plans")).to_have_count(0)


def test_conversations_can_be_created_renamed_and_deleted(page, user):
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_role("button", name="+ New conversation").click()
    wait_connected(page)
    assert Conversation.objects.filter(owner=user).count() == 2
    page.get_by_label("Conversation actions").click()
    page.get_by_label("Title").fill("Renamed chat")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("#conversation-list")).to_contain_text("Renamed chat")
    page.get_by_label("Conversation actions").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    expect(page.locator("#conversation-list")).not_to_contain_text("Renamed chat")
    assert not Conversation.objects.filter(title="Renamed chat").exists()
