"""JSONL objects in S3-compatible storage, against moto's S3 server on loopback (the real
S3 wire protocol, signed by boto3): one object per batch named by its first seq, lines in
chain order; storage that is down keeps every record until it is back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from platform_app.audit_export.services import exporter_run, exporter_test
from platform_app.models import AuditExporter
from tests.audit_export.conftest import exporter_new, records_sealed
from tests.httpserver import free_port

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

HOST = "127.0.0.93"
KEYS = {"aws_access_key_id": "AKIDTESTING", "aws_secret_access_key": "testing-secret"}


class S3:
    def __init__(self) -> None:
        self.port = free_port(HOST)
        self.server = moto_server.ThreadedMotoServer(ip_address=HOST, port=self.port, verbose=False)

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def client(self) -> Any:
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", **KEYS)

    def lines(self, bucket: str, prefix: str = "") -> list[str]:
        client = self.client()
        listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        found = []
        for item in sorted(listed, key=lambda o: o["Key"]):
            body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().decode()
            found += body.splitlines()
        return found


@pytest.fixture
def s3() -> Iterator[S3]:
    storage = S3()
    storage.server.start()
    storage.client().create_bucket(Bucket="audit-archive")
    yield storage
    storage.server.stop()


def _exporter(s3: S3, **fields: Any) -> AuditExporter:
    values: dict[str, Any] = {
        "kind": AuditExporter.Kind.S3,
        "url": s3.endpoint,
        "bucket": "audit-archive",
        "region": "us-east-1",
        "directory": "controlcenter/prod",
        "access_key_id": KEYS["aws_access_key_id"],
        "secret_access_key": KEYS["aws_secret_access_key"],
        "allow_private": True,
    }
    return exporter_new(**(values | fields))


@pytest.mark.django_db
def test_it_writes_one_object_per_batch_and_waits_for_storage_to_return(
    s3: S3, fast_retries: Any
) -> None:
    import json

    exporter = _exporter(s3, batch_size=2)
    seqs = records_sealed(3)
    assert exporter_run(exporter.pk) == 3
    client = s3.client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="audit-archive")["Contents"]]
    assert sorted(keys) == [
        f"controlcenter/prod/audit-{seqs[0]:012d}.jsonl",
        f"controlcenter/prod/audit-{seqs[2]:012d}.jsonl",
    ]
    head = client.head_object(Bucket="audit-archive", Key=sorted(keys)[0])
    assert head["Metadata"] == {"first-seq": str(seqs[0]), "last-seq": str(seqs[1])}
    assert [json.loads(line)["seq"] for line in s3.lines("audit-archive")] == seqs

    s3.server.stop()
    more = records_sealed(2, start=3)
    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert exporter.cursor == seqs[-1] and exporter.failures == 1 and exporter.last_error
    s3.server.start()
    assert exporter_run(exporter.pk, force=True) == 2
    assert [json.loads(line)["seq"] for line in s3.lines("audit-archive")] == seqs + more


@pytest.mark.django_db
def test_a_missing_bucket_keeps_every_record(s3: S3, fast_retries: Any) -> None:
    exporter = _exporter(s3, bucket="no-such-bucket")
    records_sealed(1)
    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert exporter.cursor == 0 and "NoSuchBucket" in exporter.last_error
    assert "NoSuchBucket" in exporter_test(exporter, actor=None)
