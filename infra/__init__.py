"""Infrastructure every app builds on and that imports no app: settings helpers, the Celery
app, events and channel layers, broker transports, secrets, the websocket base, request
limits and the maintenance loop's registry."""
