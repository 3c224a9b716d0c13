"""History from Open WebUI, ChatGPT and LibreChat exports into a person's conversations."""

from chat_app.services.history_import.importer import (
    FORMATS,
    MAX_IMPORT_BYTES,
    HistoryImportError,
    ImportSummary,
    history_import,
    parse,
)

__all__ = [
    "FORMATS",
    "MAX_IMPORT_BYTES",
    "HistoryImportError",
    "ImportSummary",
    "history_import",
    "parse",
]
