"""403, 404, 405 and 500 are styled pages with a way back (DEBUG is off under pytest)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from django.views.defaults import permission_denied, server_error


def test_it_shows_a_styled_404_with_a_way_back(client, user):
    client.force_login(user)
    response = client.get("/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "There is nothing here" in html and 'href="/">Back to the chat</a>' in html
    assert 'class="topbar"' in html and "css/layout.css" in html


def test_it_shows_a_styled_404_for_another_persons_conversation(client, user, other_user):
    from chat_app.models import Conversation

    theirs = Conversation.objects.create(owner=other_user, title="private")
    client.force_login(user)
    response = client.get(f"/c/{theirs.pk}/")
    assert response.status_code == 404 and "There is nothing here" in response.content.decode()
    assert "private" not in response.content.decode()


def test_it_shows_a_styled_403(user):
    request = RequestFactory().get("/tools/")
    request.user = user
    response = permission_denied(request, PermissionDenied())
    html = response.content.decode()
    assert response.status_code == 403
    assert "You may not open this page" in html and "Back to the chat" in html


def test_it_shows_a_styled_405_to_a_browser_and_keeps_the_allow_header(client, user):
    client.force_login(user)
    response = client.get("/preferences/theme/", HTTP_ACCEPT="text/html,*/*")
    assert response.status_code == 405 and response["Allow"] == "POST"
    html = response.content.decode()
    assert "This address does not take that request" in html and "Back to the chat" in html


def test_it_leaves_a_scripts_405_bare(client, user):
    client.force_login(user)
    htmx = client.get("/preferences/theme/", HTTP_ACCEPT="text/html", HTTP_HX_REQUEST="true")
    api = client.get("/preferences/theme/", HTTP_ACCEPT="application/json")
    assert htmx.status_code == api.status_code == 405
    assert htmx.content == api.content == b""


def test_it_shows_a_styled_500_that_needs_no_database_or_user(db):
    response = server_error(RequestFactory().get("/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in html and 'href="/">Back to the chat</a>' in html
