"""Uploads into a conversation's workspace: only the owner uploads, nobody else reads, and a
file name never leaves the workspace (traversal, absolute paths, NUL, look-alike slashes,
reserved and over-long names, links planted in the workspace), whatever the client sends; and
a compressed upload is never unpacked."""

from __future__ import annotations

import gzip
import io
import os
import zipfile

import pytest
from django.test import Client

from chat_app.models import Conversation
from chat_app.services.uploads import upload_name, workspace_for
from tests.security.test_charset_bomb import MAX_GROWTH, peak_rss_growth

BODY = b"col1,col2\n1,2\n"


@pytest.fixture
def ws_root(settings, tmp_path):
    settings.WORKSPACES_DIR = tmp_path / "workspaces"
    return settings.WORKSPACES_DIR


@pytest.fixture
def alice(client, user):
    client.force_login(user)
    return client


def upload(client, conversation_id, name, body=BODY, content_type="text/csv"):
    return client.post(
        f"/c/{conversation_id}/files/upload/?name={name}", data=body, content_type=content_type
    )


def listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_owner_uploads_and_the_file_lands_in_the_workspace(alice, conversation, ws_root):
    response = upload(alice, conversation.pk, "data.csv")
    assert response.status_code == 201, response.content
    assert response.json()["file"] == {"name": "data.csv", "size": len(BODY), "mime": ""}
    ws = workspace_for(conversation)
    assert (ws / "data.csv").read_bytes() == BODY
    # The same name again does not overwrite: a numbered copy.
    assert upload(alice, conversation.pk, "data.csv").json()["file"]["name"] == "data (2).csv"
    panel = alice.get(f"/c/{conversation.pk}/files/").content.decode()
    assert "data.csv" in panel and "data (2).csv" in panel
    download = alice.get(f"/c/{conversation.pk}/files/data.csv")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == BODY
    assert download["Content-Type"] == "application/octet-stream"
    assert download["Content-Disposition"].startswith("attachment")
    assert download["X-Content-Type-Options"] == "nosniff"


def test_a_form_upload_without_script_works_too(alice, conversation, ws_root):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = alice.post(
        f"/c/{conversation.pk}/files/upload/",
        {"file": SimpleUploadedFile("notes.md", b"# hi\n")},
    )
    assert response.status_code == 201, response.content
    assert (workspace_for(conversation) / "notes.md").read_bytes() == b"# hi\n"


def test_another_users_conversation_and_files_answer_404(
    client, user, other_user, conversation, ws_root
):
    client.force_login(user)
    assert upload(client, conversation.pk, "mine.csv").status_code == 201
    client.force_login(other_user)
    assert upload(client, conversation.pk, "theirs.csv").status_code == 404
    assert client.get(f"/c/{conversation.pk}/files/").status_code == 404
    assert client.get(f"/c/{conversation.pk}/files/mine.csv").status_code == 404
    assert not (workspace_for(conversation) / "theirs.csv").exists()
    # Their own conversation does not reach alice's workspace by path either.
    bobs = Conversation.objects.create(owner=other_user)
    assert client.get(f"/c/{bobs.pk}/files/../c{conversation.pk}/mine.csv").status_code == 404
    assert client.get(f"/c/{bobs.pk}/files/%2e%2e/c{conversation.pk}/mine.csv").status_code == 404
    # Signed out: the login page, nothing stored.
    anonymous = Client()
    assert upload(anonymous, conversation.pk, "anon.csv").status_code == 302
    assert not (workspace_for(conversation) / "anon.csv").exists()


def test_an_upload_needs_the_csrf_token(user, conversation, ws_root):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert upload(strict, conversation.pk, "x.csv").status_code == 403
    assert not (workspace_for(conversation) / "x.csv").exists()


def test_oversize_is_413_with_a_clear_message_and_leaves_nothing(
    alice, conversation, ws_root, settings
):
    settings.UPLOAD_MAX_BYTES = 1024 * 1024
    response = upload(alice, conversation.pk, "big.csv", body=b"x" * (1024 * 1024 + 1))
    assert response.status_code == 413
    assert "larger than the upload limit of 1 MB" in response.json()["error"]
    assert listing(workspace_for(conversation)) == []


def test_a_body_longer_than_declared_is_cut_off_while_copied(conversation, ws_root, settings):
    from chat_app.services.uploads import UploadError, upload_store

    settings.UPLOAD_MAX_BYTES = 1024 * 1024

    class Endless:
        def read(self, size=-1):
            return b"y" * 65536

    with pytest.raises(UploadError) as caught:
        upload_store(conversation=conversation, name="stream.csv", body=Endless(), declared_size=10)
    assert caught.value.status == 413
    assert listing(workspace_for(conversation)) == []


def test_a_compressed_upload_is_stored_as_sent_and_never_unpacked(alice, conversation, ws_root):
    """Zip bombs: a zip and a gzip of 64 MiB of zeros (the gzip also sent with
    ``Content-Encoding: gzip``) land as the bytes that were sent; nothing unpacks an upload,
    and the process does not grow by what they would inflate to."""
    zeros = b"\0" * 64 * 2**20
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("zeros.bin", zeros)
    bombs = {"zeros.zip": packed.getvalue(), "zeros.gz": gzip.compress(zeros, 9)}
    del zeros, packed
    with peak_rss_growth() as growth:
        for name, body in bombs.items():
            response = upload(alice, conversation.pk, name, body=body)
            assert response.status_code == 201, response.content
        encoded = alice.post(
            f"/c/{conversation.pk}/files/upload/?name=encoded.gz",
            data=bombs["zeros.gz"],
            content_type="application/gzip",
            HTTP_CONTENT_ENCODING="gzip",
        )
        assert encoded.status_code == 201, encoded.content
    assert growth[0] < MAX_GROWTH, f"RSS grew by {growth[0] / 2**20:.0f} MiB"
    ws = workspace_for(conversation)
    assert sorted(p.name for p in ws.iterdir()) == ["encoded.gz", "zeros.gz", "zeros.zip"]
    for name, body in [*bombs.items(), ("encoded.gz", bombs["zeros.gz"])]:
        assert (ws / name).read_bytes() == body


def test_a_type_not_allowed_is_refused_clearly(alice, conversation, ws_root, settings):
    response = upload(alice, conversation.pk, "tool.exe")
    assert response.status_code == 415
    assert ".exe files are not accepted here; allowed: .txt" in response.json()["error"]
    assert upload(alice, conversation.pk, "Makefile").status_code == 415
    settings.UPLOAD_ALLOWED_TYPES = ["*"]
    assert upload(alice, conversation.pk, "tool.exe").status_code == 201


NAMES = [
    "../escape.csv",
    "../../x.zip",
    "..%2F..%2Fx.zip",
    "a/b.csv",
    "%2Fetc%2Fpasswd.txt",
    "..\\..\\x.zip",
    "..",
    ".",
    "..%00.csv",
    "a%00.csv",
    "evil%EF%BC%8F..%EF%BC%8Fx.zip",  # fullwidth solidus
    "evil%E2%88%95x.zip",  # division slash
    "x%E2%80%AEpiz.csv",  # right-to-left override: shows as x...vsc.zip
    "zero%E2%80%8Bwidth.csv",
    "line%0Abreak.csv",
    ".bashrc",
    "-rf.txt",
    "~root.txt",
    "CON.txt",
    "nul.csv",
    "trailing.csv.",
    "a:b.csv",
    "",
    "x" * 252 + ".csv",
    "%C3%A9" * 126 + ".txt",  # 256 bytes in UTF-8, 130 characters
]


def test_a_name_that_could_leave_the_workspace_is_refused(alice, conversation, ws_root):
    for name in NAMES:
        response = upload(alice, conversation.pk, name)
        assert response.status_code == 400, (name, response.content)
        assert response.json()["error"]
    assert listing(ws_root) in ([], [f"c{conversation.pk}"])


def test_unicode_names_are_kept_in_one_normal_form(conversation, ws_root):
    assert upload_name("cafe\u0301.txt") == "caf\u00e9.txt"  # NFC
    assert upload_name("  отчёт 2026.pdf ") == "отчёт 2026.pdf"


def test_a_link_planted_in_the_workspace_is_never_written_through(
    alice, conversation, ws_root, tmp_path
):
    outside = tmp_path / "outside.csv"
    outside.write_bytes(b"precious")
    ws = workspace_for(conversation)
    os.symlink(outside, ws / "data.csv")
    os.symlink(tmp_path, ws / "dir")
    response = upload(alice, conversation.pk, "data.csv")
    assert response.status_code == 201
    assert response.json()["file"]["name"] == "data (2).csv"
    assert outside.read_bytes() == b"precious"
    assert (ws / "data (2).csv").read_bytes() == BODY
    # Downloads refuse links, and the panel does not list them.
    assert alice.get(f"/c/{conversation.pk}/files/data.csv").status_code == 404
    assert alice.get(f"/c/{conversation.pk}/files/dir/outside.csv").status_code == 404
    panel = alice.get(f"/c/{conversation.pk}/files/").content.decode()
    assert "data (2).csv" in panel and "outside.csv" not in panel


def test_a_workspace_that_is_itself_a_link_is_refused(alice, conversation, ws_root, tmp_path):
    ws_root.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, ws_root / f"c{conversation.pk}")
    response = upload(alice, conversation.pk, "data.csv")
    assert response.status_code == 409
    assert "workspace cannot be opened" in response.json()["error"]
    assert list(target.iterdir()) == []


def test_hard_links_and_absolute_downloads_are_refused(alice, conversation, ws_root, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"secret")
    ws = workspace_for(conversation)
    os.link(outside, ws / "linked.txt")
    assert alice.get(f"/c/{conversation.pk}/files/linked.txt").status_code == 404
    assert alice.get(f"/c/{conversation.pk}/files//etc/passwd").status_code == 404
    assert alice.get(f"/c/{conversation.pk}/files/.hidden").status_code == 404


def test_an_admin_sets_the_limits_in_the_tools_manager(alice, conversation, ws_root, settings):
    from tools_app.executors.file.settings import FileSettings
    from tools_app.models import ToolGroupConfig

    with pytest.raises(ValueError, match="not a file extension"):
        FileSettings(upload_allowed_types=["../x"])
    ToolGroupConfig.objects.create(
        name="file", settings={"upload_max_mb": 1, "upload_allowed_types": [".CSV"]}
    )
    assert upload(alice, conversation.pk, "ok.csv").status_code == 201
    refused = upload(alice, conversation.pk, "notes.md")
    assert refused.status_code == 415 and "allowed: .csv" in refused.json()["error"]
    big = upload(alice, conversation.pk, "big.csv", body=b"x" * (1024 * 1024 + 1))
    assert big.status_code == 413
    # Never above what a request body may be.
    config = ToolGroupConfig.objects.get(name="file")
    config.settings = {"upload_max_mb": 900}
    config.save()
    settings.MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024
    from chat_app.services.uploads import upload_max_bytes

    assert upload_max_bytes() < 4 * 1024 * 1024


def test_an_auditor_reads_the_files_recorded_but_never_uploads(client, user, conversation, ws_root):
    from django.contrib.auth.models import Group, Permission, User

    from tools_app.models import AuditRecord

    group = Group.objects.create(name="auditors")
    group.permissions.add(
        Permission.objects.get(content_type__app_label="chat_app", codename="audit_conversations")
    )
    auditor = User.objects.create_user("audrey", password="audrey-password-1")
    auditor.groups.add(group)
    client.force_login(user)
    assert upload(client, conversation.pk, "mine.csv").status_code == 201
    client.force_login(auditor)
    assert upload(client, conversation.pk, "planted.csv").status_code == 404
    panel = client.get(f"/c/{conversation.pk}/files/").content.decode()
    assert "mine.csv" in panel and "Attach, drop" not in panel
    assert client.get(f"/c/{conversation.pk}/files/mine.csv").status_code == 200
    reads = AuditRecord.objects.filter(kind=AuditRecord.Kind.READ, user=auditor)
    assert {r.conversation_id for r in reads} == {conversation.pk}
    assert reads.count() == 2
    assert not (workspace_for(conversation) / "planted.csv").exists()


def test_a_workspace_the_server_cannot_write_is_a_clear_503_not_a_crash(
    alice, conversation, ws_root, monkeypatch, caplog
):
    # A fleet whose sandbox user differs from the web processes' user (as root here, a chmod
    # would not stop us: the refusal is played at the file's creation).
    from chat_app.services import uploads

    def refused(dir_fd, name):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(uploads, "_create", refused)
    response = upload(alice, conversation.pk, "data.csv")

    assert response.status_code == 503
    assert "cannot be written by the server" in response.json()["error"]
    assert "SANDBOX_UID" in caplog.text  # the operator's log says what to change
