"""Tenants, memberships, resource groups, quotas, stored usage, the usage ledger and the
limits below the tenant.

Quotas name their flavor (a device model name or a model family, Kueue's ResourceFlavor) as a
string so that this app never imports ``scheduling``; ``"*"`` means every model of the
resource group that has no more specific quota row. The ledger and usage rows likewise name
jobs and devices by id/uuid without foreign keys (tenants owns entitlement and the usage
ledger, STYLE.md §3; history outlives the jobs and devices it describes).

One module per concept: ``tenancy`` (tenants, members), ``groups`` (topologies, resource
groups), ``quotas`` (quotas, caps, stored usage, ledger), ``invitations`` (invitations,
namespaces), ``limits`` (per-user limits, budgets).
"""

from tenants.models.groups import CONSOLIDATION_BUDGET_WINDOW, ResourceGroup, Topology
from tenants.models.invitations import Invitation, TenantNamespace
from tenants.models.limits import Budget, UserLimit
from tenants.models.quotas import MAX_QUOTA_AMOUNT, AggregateCap, LedgerInterval, Quota, QuotaUsage
from tenants.models.tenancy import ANY_FLAVOR, Membership, Tenant, slug_validator

__all__ = [
    "ANY_FLAVOR",
    "CONSOLIDATION_BUDGET_WINDOW",
    "MAX_QUOTA_AMOUNT",
    "AggregateCap",
    "Budget",
    "Invitation",
    "LedgerInterval",
    "Membership",
    "Quota",
    "QuotaUsage",
    "ResourceGroup",
    "Tenant",
    "TenantNamespace",
    "Topology",
    "UserLimit",
    "slug_validator",
]
