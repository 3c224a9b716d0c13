"""Screenshots: files with a record, capped per conversation, shown in the card, served only
to the conversation's owner and auditors (a superuser holds every permission)."""

from __future__ import annotations

from pathlib import Path

from django.template.loader import render_to_string
from django.test import Client

from tests.tools.browser.conftest import configure
from tools_app.models import Screenshot, ToolCall


def test_a_viewport_screenshot_is_a_file_and_a_reference(browser, site, media_dir):
    browser.ok("browser_open", url=site.url("/"))
    result = browser.ok("browser_screenshot")
    shot = result["screenshot"]
    assert (shot["width"], shot["height"]) == (1280, 800)
    assert shot["url"] == f"/media/screenshots/{shot['id']}/"
    path = Path(media_dir) / shot["path"]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size == shot["bytes"]
    assert "base64" not in str(result) and "iVBOR" not in str(result)
    record = Screenshot.objects.get(pk=shot["id"])
    assert record.conversation_id == browser.conversation.pk
    assert record.user_id == browser.user.pk


def test_full_page_element_and_custom_viewport_screenshots(browser, site):
    configure(viewport_width=800, viewport_height=600)
    browser.ok("browser_open", url=site.url("/tall"))
    assert browser.ok("browser_screenshot")["screenshot"]["height"] == 600
    full = browser.ok("browser_screenshot", full_page=True)["screenshot"]
    assert full["width"] == 800 and full["height"] >= 2400
    browser.ok("browser_open", url=site.url("/"))
    element = browser.ok("browser_screenshot", selector="h1")["screenshot"]
    assert element["width"] < 800 and element["height"] < 100


def test_screenshots_are_capped_per_conversation(browser, site):
    configure(max_screenshots_per_conversation=2)
    browser.ok("browser_open", url=site.url("/"))
    browser.ok("browser_screenshot")
    browser.ok("browser_screenshot")
    call = browser.call("browser_screenshot")
    assert call.status == ToolCall.Status.FAILED
    assert "screenshot limit reached" in call.error and "allows 2" in call.error
    assert Screenshot.objects.filter(conversation=browser.conversation).count() == 2


def test_only_the_owner_and_auditors_can_see_a_screenshot(browser, site, other_user, staff_user):
    browser.ok("browser_open", url=site.url("/"))
    url = browser.ok("browser_screenshot")["screenshot"]["url"]

    def status(user):
        client = Client()
        if user is not None:
            client.force_login(user)
        response = client.get(url)
        if response.status_code == 200:
            assert response["Content-Type"] == "image/png"
            assert b"".join(response.streaming_content)[:4] == b"\x89PNG"
        return response.status_code

    assert status(browser.user) == 200
    assert status(staff_user) == 200
    assert status(other_user) == 404
    assert status(None) in (302, 404)  # anonymous: the login page, or nothing
    owner = Client()
    owner.force_login(browser.user)
    assert owner.get("/media/screenshots/999999999/").status_code == 404


def test_the_card_shows_a_thumbnail_that_opens_full_size(browser, site):
    browser.ok("browser_open", url=site.url("/readme"))
    call = browser.call("browser_screenshot")
    html = render_to_string("tools/_toolcall_card.html", {"call": call})
    shot = call.result["screenshot"]
    link = f'<a href="/media/screenshots/{shot["id"]}/" target="_blank"'
    assert link in html
    assert f'<img src="/media/screenshots/{shot["id"]}/" alt="Screenshot of README"' in html


def test_deleting_the_conversation_deletes_the_files(browser, site, media_dir):
    browser.ok("browser_open", url=site.url("/"))
    path = Path(media_dir) / browser.ok("browser_screenshot")["screenshot"]["path"]
    assert path.exists()
    browser.conversation.delete()
    assert not path.exists()
    assert not Screenshot.objects.exists()


def test_images_for_the_model_only_when_the_admin_enables_it(browser, site):
    from tools_app.executors.browser.screenshots import images_for_model

    browser.ok("browser_open", url=site.url("/"))
    result = browser.ok("browser_screenshot")
    assert images_for_model(result, send_images=False) == []
    [image] = images_for_model(result, send_images=True)
    assert image["mime_type"] == "image/png" and image["data"].startswith("iVBOR")
