"""Blocks the apps above the chat add to every system prompt (the platform: core memory and
the skill index). Registered at ``ready()``; the loop asks for them each round."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

logger = logging.getLogger(__name__)

# (user_id, conversation_id, offered tool names) → text to append ("" for none)
PromptBlocks = Callable[[int | None, int | None, Collection[str]], str]
_blocks: dict[str, PromptBlocks] = {}


def prompt_blocks_register(name: str, blocks: PromptBlocks) -> None:
    """Registering a name again replaces it."""
    _blocks[name] = blocks


def prompt_blocks(
    *, user_id: int | None, conversation_id: int | None, offered: Collection[str]
) -> str:
    """Every registered block, in registration order. Never raises: a turn goes on without a
    block that failed."""
    out = []
    for name, blocks in _blocks.items():
        try:
            out.append(blocks(user_id, conversation_id, offered))
        except Exception:
            logger.exception("the %s prompt blocks failed", name)
    return "".join(out)
