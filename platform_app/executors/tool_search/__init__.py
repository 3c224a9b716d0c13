"""Tool search (issue 38): ``tool_search`` finds, among the tools the person may use in this
conversation, those that match a few words, and loads their schemas into the turn's next
rounds. The loop offers it instead of every schema when those schemas outweigh the agent
profile's budget (``chat_app.services.tool_offer``).

It reads only the configuration (grants, switches, the profile, the turn's scope) through the
same ``turn_offer`` the loop builds its tool list with, so it can name nothing the person could
not call: an ungranted, disabled or unreviewed tool is never among what it searches. Runs in
the worker, no sandbox (it runs no commands and touches no files)."""
