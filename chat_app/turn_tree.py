"""The tree of a conversation's turns: edited and regenerated messages start siblings, and the
page and the model follow one path through it (chat_app.services.branches). Reads models only,
so events and selectors can both use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chat_app.models import Turn
from infra.prepared import Prepared


@dataclass(frozen=True)
class BranchInfo:
    """Where a turn stands among its siblings: ``index`` of ``count`` (1-based)."""

    index: int
    count: int
    previous: int | None
    next: int | None


@dataclass
class TurnTree:
    order: list[int]  # every turn, oldest first
    parent: dict[int, int | None]
    path: list[int]  # the shown path, first turn first
    at: dict[int, Any]  # when each was started, or last chosen
    children: dict[int | None, list[int]]  # oldest first; None: the first turns

    def latest_leaf(self, start: int) -> int:
        """From ``start`` down, the child last started or chosen at each step: the branch as
        it was last seen."""
        node = start
        while True:
            children = self.children.get(node)
            if not children:
                return node
            node = max(children, key=lambda t: (self.at[t], t))

    def siblings(self, turn_id: int) -> list[int]:
        return self.children.get(self.parent.get(turn_id), [])

    def branch_info(self, turn_id: int) -> BranchInfo | None:
        siblings = self.siblings(turn_id)
        if len(siblings) < 2:
            return None
        i = siblings.index(turn_id)
        return BranchInfo(
            index=i + 1,
            count=len(siblings),
            previous=siblings[i - 1] if i > 0 else None,
            next=siblings[i + 1] if i + 1 < len(siblings) else None,
        )

    def head(self) -> int | None:
        """The last turn of the shown path (``turn_head_id``): where a new turn goes."""
        return self.path[-1] if self.path else None

    def branch_info_added(self, turn_id: int, parent_id: int | None) -> BranchInfo | None:
        """``branch_info`` of ``turn_id``, just added under ``parent_id`` (the newest of its
        siblings), without reading the tree again."""
        self.parent[turn_id] = parent_id
        self.children.setdefault(parent_id, []).append(turn_id)
        self.order.append(turn_id)
        return self.branch_info(turn_id)

    def is_linear(self) -> bool:
        return len(self.path) == len(self.order)


@dataclass(frozen=True)
class Running:
    """The conversation's running turn, as the tree's read found it."""

    id: int
    phase: str


def _rows_query(conversation_id: int, *extra: str) -> Any:
    fields = ("id", "parent_id", "started_at", "chosen_at", *extra)  # _tree reads the first four
    return (
        Turn.objects.filter(conversation_id=conversation_id)
        .order_by("started_at", "id")
        .values_list(*fields)
    )


# Every message sent and every model round reads the tree: compiled once (infra.prepared).
_ROWS = Prepared(_rows_query, conversation_id=int)
_ROWS_RUNNING = Prepared(
    lambda conversation_id: _rows_query(conversation_id, "status", "phase"), conversation_id=int
)


def _rows(conversation_id: int) -> list[tuple[Any, ...]]:
    return list(_ROWS.rows(conversation_id=conversation_id))


def turn_tree_and_running(conversation_id: int) -> tuple[TurnTree, Running | None]:
    """The tree and the running turn (at most one runs) in one read: what sending a message
    needs to know."""
    rows = _ROWS_RUNNING.rows(conversation_id=conversation_id)
    running = next(
        (Running(row[0], row[5]) for row in reversed(rows) if row[4] == Turn.Status.RUNNING),
        None,
    )
    return _tree(rows), running


def turn_tree(conversation_id: int) -> TurnTree:
    return _tree(_rows(conversation_id))


def _tree(rows: list[tuple[Any, ...]]) -> TurnTree:
    parent: dict[int, int | None] = {row[0]: row[1] for row in rows}
    children: dict[int | None, list[int]] = {}
    for row in rows:
        children.setdefault(row[1], []).append(row[0])
    path: list[int] = []
    if rows:
        head = max(rows, key=lambda r: (r[3] or r[2], r[0]))[0]  # as turn_head_id
        node: int | None = head
        seen: set[int] = set()  # a list's `in` made a long conversation's walk quadratic
        while node is not None and node not in seen:
            seen.add(node)
            path.append(node)
            node = parent.get(node)
        path.reverse()
    return TurnTree(
        order=[r[0] for r in rows],
        parent=parent,
        path=path,
        at={r[0]: r[3] or r[2] for r in rows},
        children=children,
    )
