"""The programmatic surface's pages in real Chromium: an admin registers a webhook, reads its
secret once, sends a test and reads the delivery log (1280 wide, light and dark); a person
makes a token with fewer scopes and edits them on a phone (390 wide)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from platform_app.models import WebhookDelivery, WebhookEndpoint
from tests.e2e.conftest import docs_shot, login
from tests.e2e.test_layout import PHONE, axe_violations
from tests.httpserver import Hit, Response, serving
from tools_app.models import ApiToken

pytestmark = [pytest.mark.e2e]
RECEIVER = "127.0.0.62"


@pytest.fixture
def ada(transactional_db: None) -> Any:
    return get_user_model().objects.create_superuser("ada", password="ada-password-1")


@pytest.fixture
def receiver() -> Iterator[Any]:
    def hook(hit: Hit) -> Response:
        return 200, [], b"thanks"

    with serving(RECEIVER, {("POST", "/cc"): hook}) as server:
        yield server


def test_an_admin_registers_a_webhook_and_reads_its_delivery_log(page, ada, receiver):
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "ada", "ada-password-1")
    page.goto("/webhooks/")
    expect(page.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
    form = page.get_by_role("form", name="New webhook")
    form.get_by_label("Name").fill("Ops bridge")
    form.get_by_label("URL").fill(receiver.url("/cc"))
    form.get_by_label("turn.finished").check()
    form.get_by_label("approval.requested").check()
    form.get_by_label("Allow a private or loopback host").check()
    form.get_by_role("button", name="Add webhook").click()

    endpoint = WebhookEndpoint.objects.get()
    expect(page.locator("#webhook-secret")).to_have_text(endpoint.secret)
    page.get_by_role("button", name="Send test").click()
    expect(page.locator(".banner", has_text="A test delivery")).to_be_visible()
    delivered = page.locator(".deliveries-table .status-word", has_text="delivered")
    for _ in range(50):  # the worker sends it: reload until the log says so
        if delivered.count():
            break
        page.wait_for_timeout(200)
        page.reload()
    expect(delivered).to_be_visible()
    expect(page.locator("#webhook-secret")).to_have_count(0)  # shown once
    page.locator(".attempts summary").first.click()
    expect(page.locator(".attempts li").first).to_contain_text("HTTP 200")
    assert receiver.hits[0].headers["x-cc-event"] == "ping"
    docs_shot(page, "webhook-1280", full_page=True)
    problems = axe_violations(page)
    page.evaluate("document.documentElement.dataset.theme = 'dark'")
    docs_shot(page, "webhook-dark-1280", full_page=True)
    problems += axe_violations(page)

    page.get_by_role("button", name="Send again").first.click()
    expect(page.locator(".banner", has_text="is sent again")).to_be_visible()
    assert WebhookDelivery.objects.count() == 2
    page.goto("/webhooks/")
    expect(page.get_by_role("link", name="Ops bridge")).to_be_visible()
    docs_shot(page, "webhooks-1280", full_page=True)
    problems += axe_violations(page)
    # The Tokens page at the same width: an admin's scopes, and the Edit of a token.
    from platform_app.api_tokens import api_token_create

    api_token_create(user=ada, name="deploy bot", scopes=["chat", "approve"])
    page.goto("/tokens/")
    page.get_by_text("Edit").first.click()
    expect(page.get_by_role("form", name="Edit deploy bot")).to_be_visible()
    docs_shot(page, "tokens-1280", full_page=True)
    problems += axe_violations(page)
    assert not problems, "\n".join(problems)


def test_a_person_makes_a_narrow_token_and_edits_it_on_a_phone(browser, app_server, ada):
    member = get_user_model().objects.create_user("bea", password="bea-password-1")
    context = browser.new_context(base_url=app_server, viewport=PHONE)
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        login(page, "bea", "bea-password-1")
        page.goto("/tokens/")
        form = page.get_by_role("form", name="New token")
        # Not a member's to hold: not offered.
        expect(form.locator("input[name=scopes][value='tools:admin']")).to_have_count(0)
        form.get_by_label("Name").fill("n8n")
        # Only the read-only scope is ticked to start with (issue 39): the rest is chosen.
        for scope in ("chat", "write", "approve", "mcp"):
            expect(form.locator(f"input[name=scopes][value={scope}]")).not_to_be_checked()
        expect(form.locator("input[name=scopes][value=read]")).to_be_checked()
        form.locator("input[name=scopes][value=chat]").check()
        form.get_by_label("Requests a minute").fill("30")
        form.get_by_role("button", name="Create token").click()
        expect(page.locator("#new-token")).to_be_visible()
        token = ApiToken.objects.get(user=member)
        assert token.scopes == ["chat", "read"] and token.rate_limit_per_minute == 30
        docs_shot(page, "tokens-created-390", full_page=True)

        page.get_by_text("Edit").click()
        editing = page.get_by_role("form", name="Edit n8n")
        editing.locator("input[name=scopes][value=approve]").check()
        editing.locator("input[name=scopes][value=chat]").uncheck()
        editing.get_by_label("Requests a minute").fill("")
        editing.get_by_role("button", name="Save").click()
        expect(page.locator(".banner", has_text="saved")).to_be_visible()
        token.refresh_from_db()
        assert token.scopes == ["read", "approve"] and token.rate_limit_per_minute is None
        row = page.locator(".tokens-table tr", has_text="n8n")
        expect(row.locator(".token-scopes")).to_have_text("readapprove")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the Tokens page is {width}px wide"
        docs_shot(page, "tokens-390", full_page=True)
        assert not axe_violations(page)
    finally:
        context.close()
    assert not errors


def test_the_webhooks_pages_fit_a_phone(browser, app_server, ada):
    endpoint = WebhookEndpoint.objects.create(
        name="Ops bridge",
        url="https://hooks.example.com/a/very/long/path/that/must/wrap/on/a/phone",
        secret="whsec_x",
        events=["turn.finished", "toolcall.failed"],
    )
    WebhookDelivery.objects.create(
        endpoint=endpoint, event="turn.finished", event_id="9e1c0f4e-7d1b-4c4e-8f39-6f1f0b6c2a11",
        status="failed", attempts=6, last_status_code=503, last_error="answered HTTP 503",
    )  # fmt: skip
    context = browser.new_context(base_url=app_server, viewport=PHONE, color_scheme="dark")
    page = context.new_page()
    try:
        login(page, "ada", "ada-password-1")
        for url, shot in (("/webhooks/", "webhooks"), (f"/webhooks/{endpoint.pk}/", "webhook")):
            page.goto(url)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"{url} is {width}px wide"
            docs_shot(page, f"{shot}-dark-390", full_page=True)
            assert not axe_violations(page)
    finally:
        context.close()
