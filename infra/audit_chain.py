"""The audit chain's arithmetic: canonical bytes, record hashes, checkpoint signatures, and the
verification of a chain. Pure: no database and no Django, so an exported JSONL file verifies
on another machine with only the public key (``manage.py audit verify --file F --public-key K``).

A record's hash is SHA-256 over the canonical JSON of ``{"seq", "prev", "record"}``: its
place in the chain, the previous record's hash (64 zeros before the first), and its content as
the sealer read it back from the database (``tools_app.services.audit_chain.record_document``).
Canonical JSON: keys sorted, no spaces, UTF-8, no NaN. A checkpoint is an Ed25519 signature
over the canonical JSON of ``{"kind", "seq", "hash", "signed_at", "key"}``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

GENESIS = "0" * 64


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def timestamp(value: datetime | None) -> str | None:
    """A time as the chain writes it: UTC, ISO 8601, microseconds."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def record_hash(seq: int, prev: str, record: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical({"seq": seq, "prev": prev, "record": record})).hexdigest()


def checkpoint_payload(*, kind: str, seq: int, hash: str, signed_at: str, key: str) -> bytes:
    return canonical({"kind": kind, "seq": seq, "hash": hash, "signed_at": signed_at, "key": key})


def key_id(public_key: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def checkpoint_valid(checkpoint: Mapping[str, Any], keys: Mapping[str, Ed25519PublicKey]) -> bool:
    public = keys.get(checkpoint["key"])
    if public is None:
        return False
    try:
        public.verify(
            base64.b64decode(checkpoint["signature"]),
            checkpoint_payload(
                kind=checkpoint["kind"],
                seq=checkpoint["seq"],
                hash=checkpoint["hash"],
                signed_at=checkpoint["signed_at"],
                key=checkpoint["key"],
            ),
        )
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass
class Problem:
    """What verification found wrong, naming the record (``seq`` and, from a database, its
    row ``id``) where the chain stops being what was sealed and signed."""

    seq: int | None
    text: str
    id: int | None = None

    def __str__(self) -> str:
        where = f"record seq {self.seq}" if self.seq is not None else "chain"
        if self.id is not None:
            where += f" (id {self.id})"
        return f"{where}: {self.text}"


@dataclass
class Report:
    records: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    checkpoints: int = 0
    signed_through: int | None = None  # the last record a valid checkpoint covers
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(
    records: Iterable[Mapping[str, Any]],
    checkpoints: Iterable[Mapping[str, Any]],
    keys: Mapping[str, Ed25519PublicKey],
    *,
    head: Mapping[str, Any] | None = None,
) -> Report:
    """Check ``records`` (in ``seq`` order: ``{"seq", "prev", "hash", "record"}`` and maybe
    ``"id"``) against each other and against the signed ``checkpoints``; ``keys``: key id →
    public key; ``head``: the database's chain head (``{"seq", "hash"}``), when there is one.

    Every problem names the first record where the chain differs from what was sealed:
    changed (its content no longer gives its hash), deleted (a ``seq`` is missing), inserted or
    reordered (a record's link does not match the record before it), or rewritten wholesale
    (hashes recomputed by someone without the signing key: a checkpoint no longer matches)."""
    report = Report()
    marks: dict[int, Mapping[str, Any]] = {}
    for cp in checkpoints:
        report.checkpoints += 1
        if not checkpoint_valid(cp, keys):
            known = cp["key"] in keys
            report.problems.append(
                Problem(
                    cp["seq"],
                    f"the {cp['kind']} checkpoint signed at {cp['signed_at']} has "
                    + (
                        "a signature that does not verify"
                        if known
                        else f"an unknown key {cp['key']}"
                    )
                    + " (forged or altered checkpoint)",
                )
            )
            continue
        if marks.get(cp["seq"], {}).get("kind") != "retention":
            marks[cp["seq"]] = cp

    prev_seq: int | None = None
    prev_hash = GENESIS
    for row in records:
        seq, link, stored = int(row["seq"]), row["prev"], row["hash"]
        rid = row.get("id")
        report.records += 1
        if prev_seq is None:
            report.first_seq = seq
            if seq != 1:
                anchor = marks.get(seq - 1)
                if anchor is None or anchor["hash"] != link:
                    report.problems.append(
                        Problem(
                            seq,
                            f"the chain starts at seq {seq}, and no signed checkpoint at seq "
                            f"{seq - 1} vouches for its link: records before it were deleted",
                            rid,
                        )
                    )
                prev_hash = link
        else:
            if seq > prev_seq + 1:
                missing = (
                    f"seq {prev_seq + 1}"
                    if seq == prev_seq + 2
                    else f"seq {prev_seq + 1} to {seq - 1}"
                )
                report.problems.append(
                    Problem(prev_seq + 1, f"deleted: {missing} missing before seq {seq}", rid)
                )
            elif seq <= prev_seq:
                report.problems.append(
                    Problem(seq, f"out of order: seq {seq} comes after seq {prev_seq}", rid)
                )
            if link != prev_hash:
                report.problems.append(
                    Problem(
                        seq,
                        f"its link does not match the record before it (seq {prev_seq}): "
                        "a record was inserted, reordered, changed or deleted here",
                        rid,
                    )
                )
        computed = record_hash(seq, link, row["record"])
        if computed != stored:
            report.problems.append(
                Problem(
                    seq, "changed: its content no longer gives the hash it was sealed with", rid
                )
            )
        mark = marks.get(seq)
        if mark is not None:
            if mark["hash"] != stored or computed != stored:
                report.problems.append(
                    Problem(
                        seq,
                        f"does not match the {mark['kind']} checkpoint signed at "
                        f"{mark['signed_at']}: the chain up to here was rewritten",
                        rid,
                    )
                )
            elif report.ok:
                report.signed_through = seq
        prev_seq, prev_hash = seq, stored
        report.last_seq = seq

    top = max(marks, default=None)
    last = report.last_seq or 0
    # Only a retention cut may stand past the end: when it deleted every record.
    if (
        top is not None
        and top > last
        and not (report.last_seq is None and marks[top]["kind"] == "retention")
    ):
        report.problems.append(
            Problem(
                last + 1,
                f"deleted: a signed checkpoint vouches for records up to seq {top}, "
                f"the chain ends at seq {last}",
            )
        )
    if head is not None and report.last_seq is not None:
        if int(head["seq"]) < report.last_seq:
            report.problems.append(
                Problem(
                    int(head["seq"]) + 1,
                    f"inserted: records after the chain head (seq {head['seq']}) "
                    "that the sealer never linked",
                )
            )
        elif int(head["seq"]) > report.last_seq:
            report.problems.append(
                Problem(
                    report.last_seq + 1,
                    f"deleted: the chain head is seq {head['seq']}, the last record is seq "
                    f"{report.last_seq}",
                )
            )
        elif head["hash"] != prev_hash:
            report.problems.append(
                Problem(report.last_seq, "the last record does not match the chain head")
            )
    if report.ok and report.last_seq is not None and (report.signed_through or 0) < report.last_seq:
        report.notes.append(
            f"records after seq {report.signed_through or 0} are linked but not yet under a "
            "signed checkpoint (the next checkpoint covers them)"
        )
    report.problems.sort(key=lambda p: p.seq if p.seq is not None else -1)
    return report


def load_public_keys(pems: Iterable[bytes]) -> dict[str, Ed25519PublicKey]:
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    keys: dict[str, Ed25519PublicKey] = {}
    for pem in pems:
        public = load_pem_public_key(pem)
        if not isinstance(public, Ed25519PublicKey):
            raise ValueError("not an Ed25519 public key")
        keys[key_id(public)] = public
    return keys


def verify_lines(lines: Iterator[str], keys: dict[str, Any]) -> Report:
    records: list[dict[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number}: not JSON ({exc})") from exc
        kind = item.pop("type", None)
        if kind == "record":
            records.append(item)
        elif kind == "checkpoint":
            checkpoints.append(item)
    return verify(records, checkpoints, keys)


def now_stamp() -> str:
    return timestamp(datetime.now(UTC)) or ""
