"""REST API of the tenants app."""
