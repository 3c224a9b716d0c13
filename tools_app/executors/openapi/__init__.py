"""OpenAPI: each operation of an imported OpenAPI 3.0/3.1 document is a function.

One tool group per document. Calls go from the worker to the document's base URL only (its
host is the group's allowlist), behind the same SSRF guard as the HTTP tool; credentials (API
key, bearer token, basic password) are encrypted at rest and added to the request at run time,
so they never appear in arguments, cards or the audit log.
"""
