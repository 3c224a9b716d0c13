"""The language in real Chromium: a person switches to Russian in the account menu and back,
a phone whose browser asks for Russian gets it from the login page on, and the chat, the Tools
Manager and a settings page in Russian at 1280 and 390 px, light and dark (docs/GALLERY.md)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat_app.models import Conversation
from platform_app.models import UserPreferences
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.e2e.test_layout import axe_violations
from tests.llm_server import Call, Reply

pytestmark = [pytest.mark.e2e]

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def ada(transactional_db: None) -> Any:
    return get_user_model().objects.create_superuser("ada", password="ada-password-1")


def script_a_turn(llm: Any) -> None:
    llm.script(
        Reply(
            text="Проверю время в обоих городах.",
            calls=[
                Call("current_time", {"timezone": "Europe/Moscow"}),
                Call("current_time", {"timezone": "Asia/Novosibirsk"}),
            ],
        ),
        Reply(text="В Москве **вечер**, в Новосибирске уже ночь."),
    )


def ask_and_wait(page: Any) -> None:
    wait_connected(page)
    page.get_by_label("Сообщение").fill("Который час в Москве и в Новосибирске?")
    page.keyboard.press("Enter")
    expect(page.get_by_text("в Новосибирске уже ночь")).to_be_visible()
    expect(page.locator(".toolcall .status-word").first).to_have_text("успешно")


def shoot_russian_pages(page: Any, size: str, *, phone: bool) -> None:
    """The chat (as it is now), the Tools Manager and the Shell settings, light then dark."""
    chat_url = page.url
    for theme in ("", "-dark"):
        if theme:
            page.goto(chat_url)
            if phone:
                page.get_by_role("button", name="Меню").click()
            page.locator("#theme-toggle").click()
            expect(page.locator("html")).to_have_attribute("data-theme", "dark")
            page.goto(chat_url)
        wait_connected(page)
        page.wait_for_load_state("networkidle")
        docs_shot(page, f"ru-chat{theme}-{size}")
        page.goto("/tools/")
        page.wait_for_load_state("networkidle")
        docs_shot(page, f"ru-tools{theme}-{size}")
        page.goto("/tools/groups/shell/edit/")
        docs_shot(page, f"ru-settings{theme}-{size}")
        # Russian text is longer: nothing may stick out sideways.
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"the settings page scrolls sideways by {overflow}px at {size}"
    page.goto(chat_url)


def test_a_person_switches_to_russian_and_back_on_a_desktop(page, ada, llm, provider):
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "ada", "ada-password-1")
    wait_connected(page)
    expect(page.get_by_role("button", name="Send")).to_be_visible()

    page.get_by_label("Account menu of ada").click()
    page.get_by_role("button", name="Русский").click()
    expect(page.locator("html")).to_have_attribute("lang", "ru")
    expect(page.get_by_role("button", name="Отправить")).to_be_visible()
    assert UserPreferences.objects.get(user=ada).language == "ru"
    # The scripts' strings come from the Russian catalog.
    assert page.evaluate("window.gettext('Copied')") == "Скопировано"

    script_a_turn(llm)
    ask_and_wait(page)
    assert Conversation.objects.get(owner=ada).language == "ru"
    assert axe_violations(page) == []
    shoot_russian_pages(page, "1280", phone=False)

    # Back to what the browser asks for (English here).
    page.get_by_label("Меню учётной записи ada").click()
    page.get_by_role("button", name="Как в браузере").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert UserPreferences.objects.get(user=ada).language == ""


def test_a_phone_that_asks_for_russian_gets_it_then_the_person_picks_english(
    browser, app_server, ada, llm, provider
):
    context = browser.new_context(base_url=app_server, viewport=PHONE, locale="ru-RU")
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto("/accounts/login/")
        expect(page.locator("html")).to_have_attribute("lang", "ru")
        page.get_by_label("Имя пользователя").fill("ada")
        page.get_by_label("Пароль").fill("ada-password-1")
        page.get_by_role("button", name="Войти").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)

        script_a_turn(llm)
        ask_and_wait(page)
        shoot_russian_pages(page, "390", phone=True)

        page.get_by_role("button", name="Меню").click()  # the account's items are in it
        page.get_by_role("button", name="English").click()
        expect(page.locator("html")).to_have_attribute("lang", "en")
        page.get_by_role("button", name="Menu").click()
        expect(page.get_by_role("button", name="Log out")).to_be_visible()
        assert UserPreferences.objects.get(user=ada).language == "en"
    finally:
        context.close()
    assert not errors, errors
