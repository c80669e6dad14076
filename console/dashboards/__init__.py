"""Server-rendered dashboards; they read through selectors and post to services."""
