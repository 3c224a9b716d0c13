"""Docker: look at (and, if an admin allows it, act on) containers of an engine the admin
names. This is not the sandbox: it talks to the host's engine through the docker SDK, limited
by allowed operations and a container allowlist; sandbox containers stay out of reach unless an
admin names them explicitly."""
