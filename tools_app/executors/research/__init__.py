"""Research tools: ``web_search`` through an admin-configured search backend (a SearXNG JSON
API or a Tavily-compatible API) and ``extract_page_content``, which reads web pages as clean
text.

Both go over the network only through the HTTP tool's SSRF-guarded client
(``tools_app.executors.http.client.fetch``). Pages are fetched under the HTTP group's host
policy and size limit, so one admin decision says what the agent may reach; the search backend
is the one host the admin named in this group's settings, and its API key is kept encrypted
(a ``SecretStr`` settings field, stored in ``ToolGroupConfig.secrets``).
"""
