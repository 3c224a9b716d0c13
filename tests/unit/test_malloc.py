"""``serve`` caps glibc's malloc arenas unless MALLOC_ARENA_MAX already did."""

from __future__ import annotations

import platform

import pytest

from infra.malloc import malloc_arenas_limit


def test_it_leaves_malloc_arena_max_to_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert malloc_arenas_limit(2) is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_it_sets_the_limit_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert malloc_arenas_limit(2) is True
