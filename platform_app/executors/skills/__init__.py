"""Skills: skill_list and skill_load over SKILL.md files from the data directory
(``SKILLS_DIR``) and from the conversation workspace's ``skills/`` (untrusted: read without
following links, size-capped). Names and descriptions go into the system prompt; the full
text is loaded on demand."""
