"""Time: the simplest executor, and the template for the others (tools, settings, activity)."""
