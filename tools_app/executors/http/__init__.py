"""HTTP tool: ``http_request`` through an SSRF-guarded, address-pinned client.

``client.fetch`` is the engine; the guard itself lives in ``tools_app.netguard`` so the browser
tool's request router applies the very same rules.
"""
