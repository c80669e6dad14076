"""Request hardening shared by every app: bounded and NUL-free request bodies (DRF parsers),
NUL-free URLs (middleware), a write throttle that survives a Redis outage."""
