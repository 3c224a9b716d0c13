"""The cyclic garbage collector in a long-lived server process (issue 38, CPU per turn).

A full (generation 2) collection walks every tracked object in the process: in ``serve``,
after start-up, that is Django, the apps, the tool registry and their imports, ~1 M objects
that live until the process ends, so each full collection held the GIL for ~300 ms under a
load of turns (measured with ``gc.callbacks``; 50–60 ms frozen; see bench/HISTORY.md).
``heap_settle`` moves what exists once start-up is done into the collector's permanent
generation (``gc.freeze``: those objects are never walked again) and, optionally, lets more
allocations pass before a young collection (``GC_THRESHOLD``).
Collection itself stays on: what a turn leaves in cycles is still freed.
"""

from __future__ import annotations

import gc


def heap_settle(*, freeze: bool | None = None, threshold: int | None = None) -> int:
    """Collect once, then (``freeze``) exempt every object alive now from later
    collections; ``threshold`` > 0 sets generation 0's. Returns the objects frozen. Either
    left out: the setting (``GC_FREEZE``, ``GC_THRESHOLD``)."""
    if freeze is None or threshold is None:
        from django.conf import settings

        freeze = settings.GC_FREEZE if freeze is None else freeze
        threshold = settings.GC_THRESHOLD if threshold is None else threshold
    if threshold > 0:
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(threshold, gen1, gen2)
    if not freeze:
        return 0
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
