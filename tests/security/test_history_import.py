"""History import's ways in (issue 39, item 8): the page and ``manage.py conversations
import``. A member imports only into their own account; an admin may name another; the
command is the operator's. Hostile content is stored as text and shown escaped."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from chat_app.models import Conversation
from tests.helpers import logged_in
from tools_app.models import AuditRecord

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def upload(name: str, content: bytes | None = None) -> SimpleUploadedFile:
    data = content if content is not None else (FIXTURES / name).read_bytes()
    return SimpleUploadedFile(name, data, content_type="application/json")


def test_it_imports_from_the_page_and_shows_a_summary(user):
    client = logged_in(user)
    assert "Import history" in client.get("/c/import/").content.decode()
    response = client.post(
        "/c/import/", {"file": upload("chatgpt-conversations.json"), "format": "auto"}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "2 conversations, 9 messages imported." in page
    assert "2 messages skipped: tool call or tool output" in page
    assert Conversation.objects.filter(owner=user, imported_from="chatgpt").count() == 2
    (record,) = AuditRecord.objects.filter(kind=AuditRecord.Kind.IMPORT)
    assert record.user == user and record.detail["via"] == "page"


def test_a_chosen_format_that_does_not_fit_is_refused_saying_where(user):
    client = logged_in(user)
    response = client.post(
        "/c/import/", {"file": upload("openwebui-export.json"), "format": "chatgpt"}
    )
    assert response.status_code == 400
    assert "Not imported: conversations[0].mapping: Field required" in response.content.decode()
    assert not Conversation.objects.exists()


def test_a_member_cannot_import_into_another_account(user, other_user):
    client = logged_in(user)
    response = client.post("/c/import/", {"file": upload("librechat-export.json"), "into": "bob"})
    assert response.status_code == 403
    # Nor into a name that does not exist (the same answer: no probing for accounts).
    response = client.post(
        "/c/import/", {"file": upload("librechat-export.json"), "into": "nobody"}
    )
    assert response.status_code == 403
    assert not Conversation.objects.exists()
    assert "import-into" not in client.get("/c/import/").content.decode()


def test_an_admin_may_import_into_another_account(staff_user, other_user):
    client = logged_in(staff_user)
    assert 'id="import-into"' in client.get("/c/import/").content.decode()
    response = client.post("/c/import/", {"file": upload("librechat-export.json"), "into": "bob"})
    assert response.status_code == 200
    (conversation,) = Conversation.objects.all()
    assert conversation.owner == other_user
    (record,) = AuditRecord.objects.filter(kind=AuditRecord.Kind.IMPORT)
    assert record.user == staff_user and record.detail["for"] == "bob"


def test_another_person_cannot_open_an_imported_conversation(user, other_user):
    logged_in(user).post("/c/import/", {"file": upload("librechat-export.json")})
    (conversation,) = Conversation.objects.all()
    assert logged_in(other_user).get(f"/c/{conversation.pk}/").status_code == 404


def test_script_in_imported_content_is_shown_escaped(user):
    data = json.loads((FIXTURES / "librechat-export.json").read_text())
    data["title"] = "<script>alert('title')</script>"
    data["messages"][0]["text"] = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    client = logged_in(user)
    client.post("/c/import/", {"file": upload("x.json", json.dumps(data).encode())})
    (conversation,) = Conversation.objects.all()
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert "<script>alert(" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;title&#x27;)" in page or "&lt;script&gt;" in page


def test_a_hostile_file_is_refused_on_the_page(user):
    client = logged_in(user)
    deep = b'{"conversationId": "x", "messages": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    response = client.post("/c/import/", {"file": upload("deep.json", deep)})
    assert response.status_code == 400 and "nested deeper" in response.content.decode()


def test_an_oversized_upload_is_refused(user, monkeypatch):
    from chat_app.services import history_import

    monkeypatch.setattr(history_import, "MAX_IMPORT_BYTES", 100)
    response = logged_in(user).post("/c/import/", {"file": upload("librechat-export.json")})
    assert response.status_code == 400 and "larger than" in response.content.decode()


# ---- the command ---------------------------------------------------------------------------


def test_the_command_imports_into_the_named_account(user):
    out = io.StringIO()
    call_command(
        "conversations",
        "import",
        str(FIXTURES / "openwebui-export.json"),
        "--user",
        "alice",
        stdout=out,
    )
    assert out.getvalue().strip() == (
        "openwebui: 2 conversation(s), 9 message(s) imported into alice"
    )
    assert Conversation.objects.filter(owner=user).count() == 2
    (record,) = AuditRecord.objects.filter(kind=AuditRecord.Kind.IMPORT)
    assert record.user is None and record.username == "(operator)"
    assert record.detail["via"] == "command"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--user", "nobody"], "no active account named 'nobody'"),
        (["--user", "alice", "--format", "chatgpt"], "not imported: conversations[0].mapping"),
    ],
)
def test_the_command_refuses_clearly(user, args: list[Any], says: str):
    with pytest.raises(CommandError) as exc:
        call_command("conversations", "import", str(FIXTURES / "openwebui-export.json"), *args)
    assert says in str(exc.value)
    assert not Conversation.objects.exists()


def test_the_audit_log_shows_the_import(user, staff_user):
    logged_in(user).post("/c/import/", {"file": upload("openwebui-export.json")})
    page = logged_in(staff_user).get("/tools/audit/").content.decode()
    assert "2 conversations into alice's account" in page


def test_the_summary_in_russian_uses_its_plural_forms(user):
    from platform_app.models import UserPreferences

    UserPreferences.objects.create(user=user, language="ru")
    client = logged_in(user)
    page = client.post("/c/import/", {"file": upload("chatgpt-conversations.json")}).content
    text = page.decode()
    assert "Импорт истории" in text
    assert "2 беседы, 9 сообщений импортировано." in text
    assert "2 сообщения пропущено: вызов инструмента или его вывод" in text
    assert "1 сообщение пропущено: скрытое сообщение" in text
