"""Long-lived processes freeze what start-up built out of full collections (infra.gc_tuning);
what they allocate afterwards in cycles is still collected."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import gc, sys, weakref
from infra.gc_tuning import heap_settle
import django.db.models  # something sizeable, as start-up has
before = gc.get_threshold()[0]
frozen = heap_settle(freeze=True, threshold=int(sys.argv[1]))
class Node: pass
a, b = Node(), Node()
a.other, b.other = b, a  # a cycle made after start-up
gone = weakref.ref(a)
del a, b
gc.collect()
print(frozen, gc.get_freeze_count() == frozen, gone() is None, gc.get_threshold()[0], before)
"""


def _child(threshold: int) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(threshold)], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_start_up_is_frozen_and_later_cycles_are_still_freed() -> None:
    frozen, unchanged, freed, threshold, before = _child(0)
    assert int(frozen) > 10_000  # the imports: never walked again
    assert unchanged == "True"  # a full collection afterwards thaws nothing
    assert freed == "True"  # a cycle made afterwards is still collected
    assert threshold == before  # Python's own unless GC_THRESHOLD says


def test_a_threshold_sets_generation_zeros() -> None:
    assert _child(5000)[3] == "5000"


def test_without_freeze_nothing_is_frozen() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc; from infra.gc_tuning import heap_settle; "
            "print(heap_settle(freeze=False), gc.get_freeze_count())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["0", "0"]
