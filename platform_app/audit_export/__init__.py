"""Streaming the sealed audit log to security log systems (issue 37): exporters an admin
configures (``services``: delivery in chain order, back-off, dead letters), what goes on the
wire (``formats``: JSON and CEF; ``transports``: syslog, HEC, OTLP, files), the admin pages
(``views``) and the lag gauges (``metrics``)."""
