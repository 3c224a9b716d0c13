"""The Tools Manager (``/tools/``, staff only): groups and functions switched on and off, their
settings forms, Test runs with a live card, imported sources (MCP servers, OpenAPI documents),
limits, and the audit log. Views, forms and selectors of these pages live here; the services
they call (settings writes, sources, approval) are ``tools_app.services``."""
