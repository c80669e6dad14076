"""Shared base: abstract models, advisory locks, API helpers. Imports no console app."""
