"""A person's theme is stored on the server and set on <html> before the first paint."""

from __future__ import annotations

from platform_app.models import UserPreferences


def test_it_follows_the_system_until_the_person_chooses(client, user):
    client.force_login(user)
    html = client.get("/tokens/").content.decode()
    assert 'data-theme-choice="system"' in html and "data-theme=" not in html.split("<head>")[0]
    assert not UserPreferences.objects.filter(user=user).exists()


def test_it_stores_the_choice_and_renders_it_on_every_page(client, user):
    client.force_login(user)
    response = client.post("/preferences/theme/", {"theme": "dark"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 200 and response.json() == {"theme": "dark"}
    assert UserPreferences.objects.get(user=user).theme == "dark"
    html = client.get("/tokens/").content.decode()
    assert '<html lang="en" data-theme="dark" data-theme-choice="dark">' in html
    assert 'aria-pressed="true"' in html


def test_it_goes_back_to_following_the_system(client, user):
    client.force_login(user)
    client.post("/preferences/theme/", {"theme": "light"})
    response = client.post("/preferences/theme/", {"theme": "system", "next": "/tokens/"})
    assert response.status_code == 302 and response["Location"] == "/tokens/"
    assert UserPreferences.objects.get(user=user).theme == "system"
    assert 'data-theme-choice="system"' in client.get("/tokens/").content.decode()


def test_it_refuses_an_unknown_theme_and_keeps_the_old_one(client, user):
    client.force_login(user)
    client.post("/preferences/theme/", {"theme": "dark"})
    response = client.post("/preferences/theme/", {"theme": "neon"})
    assert response.status_code == 400 and "unknown theme" in response.json()["error"]
    assert UserPreferences.objects.get(user=user).theme == "dark"


def test_it_never_redirects_to_another_site(client, user):
    client.force_login(user)
    response = client.post(
        "/preferences/theme/", {"theme": "dark", "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_each_person_has_their_own_theme(client, user, other_user):
    client.force_login(user)
    client.post("/preferences/theme/", {"theme": "dark"})
    client.force_login(other_user)
    assert 'data-theme-choice="system"' in client.get("/tokens/").content.decode()


def test_a_signed_out_visitor_cannot_store_a_theme(client, db):
    response = client.post("/preferences/theme/", {"theme": "dark"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not UserPreferences.objects.exists()
