"""Tools defined at run time from a JSON Schema (seed 001): no Python code. One tool source
of kind ``schema`` per definition file, so grants, approvals, pins and review, limits, cards
and the audit log treat them as any imported tool. A tool is *latent* (the model produces its
``_output``; the trace marks it) or *bound* to an existing tool with an argument mapping: the
bound tool's schema, policy and activity then apply to every call, and the person must be
granted that tool too."""
