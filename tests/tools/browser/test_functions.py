"""Each browser function on a real page, through the real call path."""

from __future__ import annotations

import threading
import time

from tests.helpers import wait_for
from tests.tools.browser.conftest import configure, new_conversation
from tests.tools.browser.pages import README_TEXT
from tools_app.models import ToolCall


def test_it_opens_a_page_and_returns_url_title_and_status(browser, site):
    result = browser.ok("browser_open", url=site.url("/"))
    assert result["url"] == site.url("/")
    assert result["title"] == "Test site"
    assert result["status"] == 200
    assert "/" in site.paths()


def test_it_clicks_by_visible_text_and_by_selector(browser, site):
    browser.ok("browser_open", url=site.url("/"))
    result = browser.ok("browser_click", text="README")
    assert (result["url"], result["title"]) == (site.url("/readme"), "README")
    browser.ok("browser_back")
    result = browser.ok("browser_click", selector="a[href='/form']")
    assert result["title"] == "Search"


def test_it_types_and_submits(browser, site):
    browser.ok("browser_open", url=site.url("/form"))
    result = browser.ok("browser_type", selector="input[name=q]", text="brown fox", submit=True)
    assert result["title"] == "Results"
    assert result["url"].startswith(site.url("/search?q=brown"))
    text = browser.ok("browser_extract", selector="#q")["text"]
    assert text == "You searched for: brown fox"


def test_it_waits_for_an_element_and_for_a_time(browser, site):
    browser.ok("browser_open", url=site.url("/delayed"))
    result = browser.ok("browser_wait", selector="#late", state="visible")
    assert result["state"] == "visible" and result["waited_ms"] >= 0
    started = time.monotonic()
    assert browser.ok("browser_wait", milliseconds=300)["waited_ms"] == 300
    assert time.monotonic() - started >= 0.3


def test_a_wait_longer_than_the_timeout_is_capped(browser, site):
    configure(timeout_seconds=1)
    browser.ok("browser_open", url=site.url("/"))
    result = browser.ok("browser_wait", milliseconds=60_000)
    assert result["waited_ms"] < 1000 and "timeout" in result["capped"]


def test_it_extracts_text_links_and_a_selectors_text(browser, site):
    browser.ok("browser_open", url=site.url("/readme"))
    assert README_TEXT in browser.ok("browser_extract")["text"]
    assert browser.ok("browser_extract", selector="#text")["text"] == README_TEXT
    browser.ok("browser_open", url=site.url("/"))
    links = browser.ok("browser_extract", kind="links")["links"]
    assert {"text": "README", "url": site.url("/readme")} in links


def test_long_text_is_cut_with_a_notice(browser, site):
    configure(max_extract_chars=500)
    browser.ok("browser_open", url=site.url("/long"))
    result = browser.ok("browser_extract")
    assert result["truncated"] is True and result["chars"] > 500
    assert result["text"].startswith("word0 word1")
    assert "[truncated: showing the first 500 of" in result["text"]
    assert len(result["text"]) < 700
    links = browser.ok("browser_extract", kind="links", selector="footer")
    assert 0 < links["count"] < 40 and links["truncated"] is True


def test_it_goes_back_and_says_when_it_cannot(browser, site):
    browser.ok("browser_open", url=site.url("/"))
    browser.ok("browser_open", url=site.url("/readme"))
    assert browser.ok("browser_back")["url"] == site.url("/")
    result = browser.ok("browser_back")
    assert result["went_back"] is False and "no previous page" in result["notice"]


def test_a_missing_element_fails_with_a_clear_error(browser, site):
    browser.ok("browser_open", url=site.url("/"))
    call = browser.call("browser_click", selector="#nope")
    assert call.status == ToolCall.Status.FAILED
    assert f"no element on {site.url('/')} matches selector '#nope'" in call.error
    assert (call.result["url"], call.result["title"]) == (site.url("/"), "Test site")


def test_actions_need_an_open_page(browser):
    call = browser.call("browser_extract")
    assert call.status == ToolCall.Status.FAILED
    assert "no page is open" in call.error and "browser_open" in call.error


def test_javascript_can_be_switched_off(browser, site):
    browser.ok("browser_open", url=site.url("/js"))
    assert browser.ok("browser_extract", selector="#out")["text"] == "from js"
    configure(javascript_enabled=False)  # the context is rebuilt with the new setting
    browser.ok("browser_open", url=site.url("/js"))
    assert browser.ok("browser_extract", selector="#out")["text"] == "static"


def test_a_slow_page_times_out_with_the_configured_timeout(browser, site):
    configure(timeout_seconds=1)
    started = time.monotonic()
    call = browser.call("browser_open", url=site.url("/slow?s=4"))
    assert call.status == ToolCall.Status.FAILED
    assert call.error == "timed out after 1 s"
    assert time.monotonic() - started < 3
    configure()
    assert browser.ok("browser_open", url=site.url("/"))["title"] == "Test site"


def test_a_call_may_ask_for_less_time_than_the_admin_allows_never_more(browser, site):
    # Seed 003: browser calls take a timeout; the admin's maximum (30 s here) still wins.
    started = time.monotonic()
    call = browser.call("browser_open", url=site.url("/slow?s=4"), timeout=1)
    assert call.status == ToolCall.Status.FAILED
    assert call.error == "timed out after 1 s"
    assert time.monotonic() - started < 3
    configure(timeout_seconds=1)
    browser.ok("browser_open", url=site.url("/"))
    result = browser.ok("browser_wait", milliseconds=5_000, timeout=600)
    assert result["waited_ms"] < 1000 and "1 s" in result["capped"]
    configure()


def test_stop_cancels_a_running_action_quickly(browser, site):
    from tools_app.runtime import BindContext
    from tools_app.services.binding import CallRequest, toolcall_bind
    from tools_app.services.execution import toolcall_cancel, toolcall_execute

    call = toolcall_bind(
        request=CallRequest(tool="browser_open", arguments={"url": site.url("/slow?s=6")}),
        ctx=BindContext(
            user_id=browser.user.pk, conversation_id=browser.conversation.pk, source="api"
        ),
    )
    runner = threading.Thread(target=toolcall_execute, kwargs={"tool_call_id": call.pk})
    runner.start()
    wait_for(lambda: ToolCall.objects.get(pk=call.pk).status == "running", timeout=10)
    time.sleep(0.3)
    stopped = time.monotonic()
    toolcall_cancel(ToolCall.objects.get(pk=call.pk))
    runner.join(timeout=5)
    call.refresh_from_db()
    assert call.status == ToolCall.Status.CANCELLED
    assert time.monotonic() - stopped < 1.5
    # The conversation's browser still works afterwards.
    assert browser.ok("browser_open", url=site.url("/"))["title"] == "Test site"


def test_each_conversation_has_its_own_page(browser, site, owner):
    from tests.tools.browser.conftest import Browser

    browser.ok("browser_open", url=site.url("/readme"))
    second = Browser(owner, new_conversation(owner))
    second.ok("browser_open", url=site.url("/form"))
    assert browser.ok("browser_extract", selector="h1")["text"] == "README"
    assert second.ok("browser_extract")["url"] == site.url("/form")
