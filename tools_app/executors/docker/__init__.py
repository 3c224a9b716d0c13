"""Docker: look at (and, if an admin allows it, act on) containers of an engine the admin
names. This is not the sandbox: it talks to the host's engine through the docker SDK, limited
by allowed operations and a container allowlist; sandbox containers stay out of reach unless an
admin names them explicitly. Only staff may use it unless an admin opens it to everyone
(``staff_only``); ``docker_inspect`` redacts environment values unless ``show_env`` allows them."""
