"""REST API of the scheduling app."""
