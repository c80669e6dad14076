"""How a preemption reads to the tenants involved (issue 15: other tenants stay anonymous)."""

from __future__ import annotations

ANOTHER_TENANT = "another tenant"
#: What a victim's tenant reads about a preemption by another tenant (never its name or job).
CROSS_TENANT_PREEMPTION_MESSAGE = (
    "capacity this job borrowed from the cohort was reclaimed for its owner"
)


def preemption_as_seen(preemption, *, platform_admin: bool) -> dict:
    """``{"preemptor", "preemptor_tenant", "message"}`` of a :class:`Preemption` row as the
    victim's tenant may see them: a preemptor of another tenant is anonymous (no job id,
    tenant name or message naming them); platform admins see everything."""
    cross = bool(preemption.preemptor_tenant) and (
        preemption.preemptor_tenant != preemption.victim_tenant
    )
    if cross and not platform_admin:
        return {
            "preemptor": None,
            "preemptor_tenant": ANOTHER_TENANT,
            "message": CROSS_TENANT_PREEMPTION_MESSAGE,
        }
    return {
        "preemptor": preemption.preemptor_id,
        "preemptor_tenant": preemption.preemptor_tenant,
        "message": preemption.message,
    }
