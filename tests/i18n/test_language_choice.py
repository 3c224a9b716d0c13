"""The page's language: the browser's (Accept-Language), the language cookie on the login page,
and a signed-in person's own choice kept on the server; English when nothing asks otherwise."""

from __future__ import annotations

from platform_app.models import UserPreferences

RU = {"HTTP_ACCEPT_LANGUAGE": "ru-RU,ru;q=0.9,en;q=0.5"}


def test_a_client_that_asks_for_no_language_gets_english(client, user):
    client.force_login(user)
    html = client.get("/tokens/").content.decode()
    assert '<html lang="en"' in html and "Personal tokens let programs act for you" in html


def test_it_follows_the_browsers_language(client, user):
    client.force_login(user)
    response = client.get("/tokens/", **RU)
    html = response.content.decode()
    assert response["Content-Language"] == "ru"
    assert '<html lang="ru"' in html
    assert "Личные токены позволяют программам действовать от вашего имени" in html
    assert "Моя память" in html and "Выйти" in html  # the account menu
    assert '<script src="/jsi18n/ru.js">' in html


def test_a_browser_language_the_site_does_not_offer_gets_english(client, user):
    client.force_login(user)
    html = client.get("/tokens/", HTTP_ACCEPT_LANGUAGE="de-DE,fr;q=0.8").content.decode()
    assert '<html lang="en"' in html


def test_a_persons_choice_wins_over_the_browser_and_follows_them(client, user):
    client.force_login(user)
    response = client.post(
        "/preferences/language/", {"language": "ru"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 200 and response.json() == {"language": "ru"}
    assert UserPreferences.objects.get(user=user).language == "ru"
    client.cookies.clear()  # another browser: no cookie, an English one
    client.force_login(user)
    html = client.get("/tokens/", HTTP_ACCEPT_LANGUAGE="en-US").content.decode()
    assert '<html lang="ru"' in html and "Ваши токены" in html
    # …and back to English, although this browser asks for Russian.
    client.post("/preferences/language/", {"language": "en"})
    html = client.get("/tokens/", **RU).content.decode()
    assert '<html lang="en"' in html and "Your tokens" in html


def test_following_the_browser_again(client, user):
    client.force_login(user)
    client.post("/preferences/language/", {"language": "ru"})
    html = client.get("/tokens/").content.decode()
    assert 'id="language-browser"' in html  # offered only once a choice is stored
    response = client.post("/preferences/language/", {"language": "", "next": "/tokens/"})
    assert response.status_code == 302 and response["Location"] == "/tokens/"
    assert response.cookies["cc_language"].value == ""  # the cookie is gone
    assert UserPreferences.objects.get(user=user).language == ""
    client.cookies.clear()
    client.force_login(user)
    assert '<html lang="en"' in client.get("/tokens/").content.decode()
    assert '<html lang="ru"' in client.get("/tokens/", **RU).content.decode()


def test_it_refuses_a_language_the_site_does_not_offer(client, user):
    client.force_login(user)
    response = client.post("/preferences/language/", {"language": "xx"})
    assert response.status_code == 400 and "unknown language" in response.json()["error"]
    assert not UserPreferences.objects.filter(user=user, language="xx").exists()


def test_the_login_page_follows_the_browser_or_the_cookie(client, db):
    assert "Log in" in client.get("/accounts/login/").content.decode()
    html = client.get("/accounts/login/", **RU).content.decode()
    assert "Войти" in html and "Имя пользователя" in html
    # Signed out, the switcher sets only the cookie.
    response = client.post("/preferences/language/", {"language": "ru", "next": "/accounts/login/"})
    assert response.status_code == 302 and response.cookies["cc_language"].value == "ru"
    html = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="ru"' in html and "Войти" in html
    assert not UserPreferences.objects.exists()


def test_the_switcher_never_sends_anyone_to_another_site(client, user):
    client.force_login(user)
    response = client.post(
        "/preferences/language/", {"language": "ru", "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_the_script_strings_come_in_the_pages_language(client, db):
    russian = client.get("/jsi18n/ru.js")
    assert russian.status_code == 200 and "max-age=3600" in russian["Cache-Control"]
    body = russian.content.decode()
    assert '"Copied": "\\u0421\\u043a' in body or '"Copied": "Скопировано"' in body
    assert client.get("/jsi18n/xx.js").status_code == 404


def test_flash_messages_are_in_the_persons_language(client, user):
    client.force_login(user)
    client.post("/preferences/language/", {"language": "ru"})
    response = client.post("/tokens/999999/revoke/", follow=True)
    assert "Такого токена нет." in response.content.decode()


def test_form_errors_are_in_the_persons_language(client, staff_user):
    client.force_login(staff_user)
    response = client.post("/agents/new/", {"name": "", "all_tools": "on"}, **RU)
    html = response.content.decode()
    assert response.status_code == 400 and "Обязательное поле." in html  # Django's own


def test_error_pages_are_translated(client, user):
    client.force_login(user)
    response = client.get("/no/such/page/", **RU)
    assert response.status_code == 404 and "Здесь ничего нет" in response.content.decode()
