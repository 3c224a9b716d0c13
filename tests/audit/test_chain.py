"""The audit log's hash chain: sealing, signed checkpoints, tampering by direct SQL (changed,
deleted, inserted, reordered, rewritten) caught and located, retention, export verified
offline with only the public key, and a valid chain under concurrent writers and sealers."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from infra import audit_chain as chain
from tests.conftest import child_env
from tools_app.models import AuditChainHead, AuditCheckpoint, AuditRecord, ToolCall
from tools_app.services import audit_chain
from tools_app.services.audit import audit_call, audit_settings_change

pytestmark = [pytest.mark.modes]
ROOT = Path(__file__).resolve().parents[2]


def _records(n: int, start: int = 0) -> list[AuditRecord]:
    return [
        audit_settings_change(
            user=None, group=f"g{i}", before={"limit": i}, after={"limit": i + 1, "ratio": 0.5}
        )
        for i in range(start, start + n)
    ]


def _verify() -> chain.Report:
    return audit_chain.verify_database()


def _sql(statement: str, params: tuple = ()) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def _cli(*args: str) -> tuple[int, str]:
    """``manage.py audit …`` in this process: exit code and what it wrote."""
    from io import StringIO

    out, err = StringIO(), StringIO()
    try:
        call_command("audit", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue() + err.getvalue()
    return 0, out.getvalue() + err.getvalue()


def test_an_untouched_chain_verifies(db):
    _records(7)
    assert audit_chain.seal() == 7
    assert list(AuditRecord.objects.order_by("seq").values_list("seq", flat=True)) == list(
        range(1, 8)
    )
    report = _verify()
    assert report.ok, report.problems
    assert (report.records, report.first_seq, report.last_seq) == (7, 1, 7)
    assert report.signed_through == 7  # the first seal signs at once
    code, text = _cli("verify")
    assert code == 0 and "OK: 7 records" in text


def test_a_record_changed_through_sql_is_named(db):
    rows = _records(6)
    audit_chain.seal()
    _sql("UPDATE tools_app_auditrecord SET status = %s WHERE id = %s", ("approved", rows[3].pk))
    code, text = _cli("verify")
    assert code == 1
    assert f"record seq 4 (id {rows[3].pk}): changed" in text


def test_a_changed_json_field_is_named(db):
    rows = _records(4)
    audit_chain.seal()
    detail = dict(AuditRecord.objects.get(pk=rows[1].pk).detail)
    detail["after"] = {"limit": 999}
    AuditRecord.objects.filter(pk=rows[1].pk).update(detail=detail)
    report = _verify()
    assert not report.ok and report.problems[0].seq == 2 and "changed" in report.problems[0].text


def test_a_deleted_record_is_named(db):
    rows = _records(6)
    audit_chain.seal()
    _sql("DELETE FROM tools_app_auditrecord WHERE id = %s", (rows[2].pk,))
    report = _verify()
    assert not report.ok
    assert report.problems[0].seq == 3 and report.problems[0].text.startswith("deleted")


def test_the_newest_records_deleted_are_caught_by_the_head_and_the_checkpoint(db):
    _records(5)
    audit_chain.seal()
    _sql("DELETE FROM tools_app_auditrecord WHERE seq >= 4")
    report = _verify()
    assert not report.ok and report.problems[0].seq == 4
    assert "deleted" in report.problems[0].text


def test_an_inserted_record_is_named(db):
    rows = _records(5)
    audit_chain.seal()
    # Make room at seq 3 and put a forged record there, its own hash computed correctly.
    _sql("UPDATE tools_app_auditrecord SET seq = seq + 100 WHERE seq >= 3")
    _sql("UPDATE tools_app_auditrecord SET seq = seq - 99 WHERE seq >= 103")
    forged = AuditRecord.objects.create(kind="settings", username="mallory", status="changed")
    forged.seq, forged.prev_hash, forged.call_ref = (
        3,
        rows[1].__class__.objects.get(seq=2).record_hash,
        None,
    )
    forged.record_hash = chain.record_hash(3, forged.prev_hash, audit_chain.record_document(forged))
    forged.save()
    report = _verify()
    assert not report.ok
    first = report.problems[0]
    assert first.seq == 4 and "link does not match" in first.text  # the record after it
    assert any("inserted" in p.text for p in report.problems)  # and one past the head


def test_a_record_appended_past_the_head_is_named(db):
    rows = _records(3)
    audit_chain.seal()
    last = AuditRecord.objects.get(pk=rows[-1].pk)
    forged = AuditRecord.objects.create(kind="settings", username="mallory", status="changed")
    forged.seq, forged.prev_hash = 4, last.record_hash
    forged.record_hash = chain.record_hash(4, last.record_hash, audit_chain.record_document(forged))
    forged.save()
    report = _verify()
    assert not report.ok and report.problems[0].seq == 4
    assert "inserted" in report.problems[0].text


def test_reordered_records_are_named(db):
    rows = _records(5)
    audit_chain.seal()
    _sql("UPDATE tools_app_auditrecord SET seq = -1 WHERE id = %s", (rows[1].pk,))
    _sql("UPDATE tools_app_auditrecord SET seq = 2 WHERE id = %s", (rows[2].pk,))
    _sql("UPDATE tools_app_auditrecord SET seq = 3 WHERE id = %s", (rows[1].pk,))
    report = _verify()
    assert not report.ok and report.problems[0].seq == 2


def test_a_rewritten_chain_is_caught_by_the_signed_checkpoint(db):
    """Whoever can write the database can recompute every hash after a change; only the
    signed checkpoint, made with a key the database does not hold, tells."""
    rows = _records(5)
    audit_chain.seal()
    AuditRecord.objects.filter(pk=rows[2].pk).update(status="approved")
    prev = AuditRecord.objects.get(seq=2).record_hash
    for seq in range(3, 6):
        row = AuditRecord.objects.get(seq=seq)
        digest = chain.record_hash(seq, prev, audit_chain.record_document(row))
        AuditRecord.objects.filter(pk=row.pk).update(prev_hash=prev, record_hash=digest)
        prev = digest
    AuditChainHead.objects.filter(pk=1).update(hash=prev)
    report = _verify()
    assert not report.ok
    assert report.problems[0].seq == 5 and "checkpoint" in report.problems[0].text
    # A forged checkpoint over the new head does not verify either.
    cp = AuditCheckpoint.objects.get()
    AuditCheckpoint.objects.filter(pk=cp.pk).update(hash=prev)
    report = _verify()
    assert any("does not verify" in p.text for p in report.problems)


def test_a_call_record_is_sealed_only_when_the_call_has_finished(db, user):
    call = ToolCall.objects.create(
        user=user, tool="shell_exec", group="shell", arguments={"command": "ls"}
    )
    audit_call(call, new=True)
    _records(1)
    assert audit_chain.seal() == 1  # the settings change; the call's record is still open
    record = AuditRecord.objects.get(tool_call=call)
    assert record.seq is None
    call.status = ToolCall.Status.SUCCEEDED
    audit_call(call, changes={"status": call.status, "result": {"ok": True}})
    assert audit_chain.seal() == 1
    record.refresh_from_db()
    assert (record.seq, record.call_ref, record.status) == (2, call.pk, "succeeded")
    # Finished again (a late duplicate): a record of its own, the sealed one untouched.
    audit_call(call, changes={"status": "failed", "error": "late"})
    audit_chain.seal()
    assert AuditRecord.objects.filter(tool_call=call).count() == 2
    assert _verify().ok


def test_deleting_the_conversation_does_not_break_the_chain(db, user, conversation):
    call = ToolCall.objects.create(
        user=user, conversation=conversation, tool="file_read", status="succeeded"
    )
    audit_call(call, new=True)
    audit_chain.seal()
    conversation.delete()
    assert AuditRecord.objects.get().tool_call_id is None
    assert _verify().ok


def test_export_verifies_offline_with_only_the_public_key(db, tmp_path):
    """The exported file and the public key, checked by a fresh process with an empty state
    directory and no database: nothing but the file is read."""
    _records(4)
    audit_chain.seal()
    _records(3, start=4)
    audit_chain.checkpoint_now()
    export, key = tmp_path / "audit.jsonl", tmp_path / "audit.pub"
    assert _cli("export", str(export))[0] == 0
    key.write_text(_cli("public-key")[1])
    bare = tmp_path / "bare"
    env = child_env(CC_VAR_DIR=str(bare))
    for name in ("DATABASE_URL", "REDIS_URL", "AUDIT_SIGNING_KEY", "AUDIT_SIGNING_KEY_FILE"):
        env.pop(name, None)
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'nowhere' / 'db.sqlite3'}"

    def offline(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "manage.py",
                "audit",
                "verify",
                "--file",
                str(path),
                "--public-key",
                str(key),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = offline(export)
    assert done.returncode == 0, done.stderr
    assert "OK: 7 records (seq 1–7), 2 signed checkpoints; signed through seq 7" in done.stdout
    assert not (tmp_path / "nowhere").exists()
    assert not (bare / "audit_signing_key.pem").exists()
    # One byte of one record changed in the file: named.
    lines = export.read_text().splitlines()
    item = json.loads(lines[5])
    item["record"]["username"] = "someone-else"
    lines[5] = json.dumps(item)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    done = offline(tampered)
    assert done.returncode == 1
    assert f"record seq {item['seq']}: changed" in done.stderr
    # Another key cannot vouch for it.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    done = offline(export)
    assert done.returncode == 1 and "unknown key" in done.stderr


def test_an_export_since_a_time_starts_at_a_signed_checkpoint(db, tmp_path):
    _records(3)
    audit_chain.checkpoint_now()
    AuditRecord.objects.update(created_at=timezone.now() - timedelta(days=3))
    _records(2, start=3)
    audit_chain.checkpoint_now()
    lines = list(audit_chain.export_lines(since=timezone.now() - timedelta(days=1)))
    records = [json.loads(x) for x in lines if '"type": "record"' in x]
    assert [r["seq"] for r in records] == [4, 5]
    keys = chain.load_public_keys([_cli("public-key")[1].encode()])
    report = chain.verify_lines(iter(lines), keys)
    assert report.ok, report.problems


def test_retention_deletes_old_records_behind_a_signed_cut(db):
    _records(4)
    audit_chain.seal()
    AuditRecord.objects.update(created_at=timezone.now() - timedelta(days=100))
    _records(3, start=4)
    code, text = _cli("prune", "--before", "90d")
    assert code == 0 and "deleted 4 records through seq 4" in text
    assert sorted(AuditRecord.objects.values_list("seq", flat=True)) == [5, 6, 7]
    cut = AuditCheckpoint.objects.get(kind="retention")
    assert cut.seq == 4
    assert _verify().ok
    # Deleting one more old record by hand is not covered by the cut.
    _sql("DELETE FROM tools_app_auditrecord WHERE seq = 5")
    report = _verify()
    assert not report.ok and report.problems[0].seq == 6


def test_the_log_cannot_be_deleted_through_the_orm(db):
    _records(1)
    with pytest.raises(PermissionError):
        AuditRecord.objects.all().delete()


def test_a_forged_checkpoint_signature_is_caught(db):
    _records(2)
    audit_chain.seal()
    cp = AuditCheckpoint.objects.get()
    forged = bytearray(base64.b64decode(cp.signature))
    forged[0] ^= 1
    AuditCheckpoint.objects.filter(pk=cp.pk).update(signature=base64.b64encode(forged).decode())
    report = _verify()
    assert not report.ok and "does not verify" in report.problems[0].text


WRITER = """
import threading
from tools_app.services.audit import audit_settings_change
from tools_app.services.audit_chain import seal
from django.db import close_old_connections

def write(i):
    try:
        audit_settings_change(user=None, group=f"{TAG}-{i}", before={}, after={"n": i})
        seal()
    finally:
        close_old_connections()

threads = [threading.Thread(target=write, args=(i,)) for i in range(25)]
for t in threads: t.start()
for t in threads: t.join()
seal()
"""


def test_fifty_writers_and_sealers_in_two_processes_keep_one_valid_chain(transactional_db):
    procs = [
        subprocess.Popen(
            [sys.executable, "manage.py", "shell", "-c", WRITER.replace("TAG", repr(tag))],
            cwd=ROOT,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for tag in ("a", "b")
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()[-2000:]
    audit_chain.seal()
    seqs = list(AuditRecord.objects.order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, 51))
    report = _verify()
    assert report.ok, report.problems
    assert AuditChainHead.objects.get(pk=1).seq == 50


def test_the_generated_key_is_kept_encrypted_and_an_operators_key_takes_over(
    db, settings, tmp_path
):
    from infra.audit_key import new_private_pem
    from tools_app.models import AuditSigningKey

    _records(2)
    audit_chain.seal()
    first = AuditCheckpoint.objects.get().key_id
    with connection.cursor() as cursor:
        cursor.execute("SELECT private_pem FROM tools_app_auditsigningkey")
        (stored,) = cursor.fetchone()
    assert "PRIVATE KEY" not in stored  # encrypted at rest
    assert AuditSigningKey.objects.get().key_id == first
    # The operator gives a key of their own: new checkpoints use it, the old ones still verify.
    own = tmp_path / "audit.pem"
    own.write_text(new_private_pem())
    settings.AUDIT_SIGNING_KEY_FILE = str(own)
    _records(1, start=2)
    cp = audit_chain.checkpoint_now()
    assert cp is not None and cp.key_id != first
    assert _verify().ok
    # A row written by someone without the secrets key vouches for nothing.
    settings.AUDIT_SIGNING_KEY_FILE = ""
    audit_chain._stored.clear()
    AuditSigningKey.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tools_app_auditsigningkey (key_id, private_pem, created_at) "
            "VALUES (%s, %s, %s)",
            ("feedfacefeedface", new_private_pem(), timezone.now()),
        )
    assert "feedfacefeedface" not in audit_chain.trusted_keys()


def test_an_idle_seal_only_reads(db):
    """Every AUDIT_SEAL_SECONDS on every deployment: with nothing to link and the head signed,
    no lock is taken (on SQLite a write transaction holds back every writer)."""
    from django.db import connection as conn
    from django.test.utils import CaptureQueriesContext

    _records(2)
    audit_chain.seal()
    with CaptureQueriesContext(conn) as seen:
        assert audit_chain.seal() == 0
    statements = [q["sql"].upper() for q in seen.captured_queries]
    assert len(statements) <= 3
    assert all(s.startswith("SELECT") and "FOR UPDATE" not in s for s in statements)
