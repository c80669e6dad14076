"""Task names of the notifications app (services enqueue by name after commit;
:mod:`core.dispatch`)."""

from core.dispatch import enqueue_on_commit

DELIVER_TASK = "notifications.tasks.deliver_notification_task"
TASK_NAMES = (DELIVER_TASK,)


def enqueue_delivery(delivery_id: int) -> None:
    """Send delivery ``delivery_id`` after commit."""
    enqueue_on_commit(DELIVER_TASK, delivery_id)
