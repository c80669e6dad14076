"""Named PostgreSQL advisory locks (one registry of keys, as NetBox's ADVISORY_LOCK_KEYS).

A lock key is ``(namespace, object id)``; the namespace numbers below are stable and greppable.
"""

from django.db import connection

ADMISSION_CYCLE = 1001  # one admission cycle per resource group at a time
SIMULATED_RECONCILE = 1002  # one simulated-backend reconcile pass at a time
KUBE_INVENTORY_SYNC = 1003  # one inventory sync per Kubernetes cluster at a time
KUBE_RECONCILE = 1004  # one pod reconcile (watch/resync) per Kubernetes cluster at a time
KUBE_INTAKE = 1005  # one workload intake pass per Kubernetes cluster at a time
KUBE_CORDONS = 1006  # one device-cordon write-back per Kubernetes cluster at a time


def try_xact_lock(namespace: int, key: int) -> bool:
    """Take ``pg_try_advisory_xact_lock(namespace, key)`` in the current transaction.

    Returns:
        True when taken (released at commit/rollback), False when another session holds it.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [namespace, key])
        return bool(cursor.fetchone()[0])
