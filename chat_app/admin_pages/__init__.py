"""The admins' pages for LLM providers and agent profiles, under /agents/ (staff only)."""
