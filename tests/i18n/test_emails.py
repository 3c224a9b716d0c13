"""Emails are written in their reader's language: an approver's own choice, an invited
person's in the language of the admin who invited them."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from platform_app.models import UserPreferences
from tools_app.models import ToolCall
from tools_app.services.approval_notify import approval_emails


def test_each_approver_gets_the_approval_email_in_their_own_language(db, settings):
    settings.APP_URL = "https://cc.example"
    users = get_user_model().objects
    olga = users.create_user("olga", email="olga@example.com", is_staff=True)
    users.create_user("ed", email="ed@example.com", is_staff=True)
    UserPreferences.objects.create(user=olga, language="ru")
    alice = users.create_user("alice")
    call = ToolCall.objects.create(
        user=alice, tool="shell_exec", group="shell", approval_mode="approver"
    )
    emails = {message.to[0]: message for message in approval_emails(call)}
    assert emails["olga@example.com"].subject == "Нужно утверждение: shell_exec для alice"
    assert "Примите решение здесь: https://cc.example/approvals/" in emails["olga@example.com"].body
    assert emails["ed@example.com"].subject == "Approval needed: shell_exec for alice"


def test_an_invitation_is_written_in_the_inviting_admins_language(db, settings):
    settings.EMAIL_ENABLED = True
    client = Client()
    client.force_login(get_user_model().objects.create_user("ada", is_staff=True))
    client.post(
        "/people/users/new/",
        {"username": "dee", "email": "dee@example.com", "how": "invite"},
        HTTP_ACCEPT_LANGUAGE="ru",
    )
    [message] = mail.outbox
    assert message.subject == "Приглашение в Control Center"
    assert "Администратор создал для вас учётную запись «dee»." in message.body
