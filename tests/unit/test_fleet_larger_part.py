"""One misconfigured host must not take a working fleet down with it: a process is refused only
when it disagrees with the larger part of the live fleet; a tie goes to the side of the process
that was there first."""

from __future__ import annotations

from infra.fleet import with_the_larger_part


def test_it_keeps_the_processes_that_agree_with_most_of_the_fleet():
    assert with_the_larger_part([True, True, False], oldest_agrees=True)
    assert with_the_larger_part([True, True, False], oldest_agrees=False)


def test_it_refuses_the_process_that_agrees_with_few():
    assert not with_the_larger_part([False, False, False, True], oldest_agrees=True)  # 2 of 5
    assert not with_the_larger_part([False, False], oldest_agrees=False)


def test_it_gives_a_tie_to_the_side_of_the_oldest_process():
    assert with_the_larger_part([False], oldest_agrees=True)  # the newcomer disagrees
    assert not with_the_larger_part([False], oldest_agrees=False)
    assert with_the_larger_part([True, False, False, True], oldest_agrees=False)  # 3 of 5


def test_it_is_ready_alone():
    assert with_the_larger_part([], oldest_agrees=True)
