"""Celery tasks of notifications (thin: the service decides; the task only retries)."""

from celery import shared_task

from notifications import services
from notifications.dispatch import DELIVER_TASK


@shared_task(name=DELIVER_TASK, bind=True, max_retries=None, acks_late=True)
def deliver_notification_task(self, delivery_id: int) -> None:
    """One attempt at a delivery; a transient failure is retried after the service's backoff
    (the service stops after ``NOTIFY_MAX_ATTEMPTS``)."""
    retry_in = services.attempt_delivery(delivery_id)
    if retry_in is not None:
        raise self.retry(countdown=retry_in)
