"""Notifications: webhooks and e-mail for domain events (:mod:`core.events`) to tenants,
users and platform admins, delivered by Celery with retries and a delivery log."""
