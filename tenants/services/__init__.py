"""Write side of the tenants app, one module per concept:

* :mod:`.quotas` - quotas (Kueue nominal quota / borrowing limit / lending limit) and caps;
* :mod:`.usage` - stored usage under ordered row locks, and the near-exhaustion event;
* :mod:`.ledger` - the usage ledger's intervals;
* :mod:`.memberships` - memberships, and their sync with identity-provider groups;
* :mod:`.invitations` - invitations to a tenant;
* :mod:`.namespaces` - a tenant's namespace in each Kubernetes cluster;
* :mod:`.limits` - per-user limits and budgets (issue 33).

Scheduling tells this app about charges through these functions (it never writes the rows
itself); this app never imports ``scheduling`` (STYLE.md §3). Callers import this package
(``from tenants import services``); every name is re-exported here.
"""

from __future__ import annotations

from tenants.services.invitations import (
    INVITATION_FIELDS,
    accept_invitation,
    accept_invitation_token,
    create_invitation,
    decline_invitation,
    hash_invitation_token,
    invitation_is_for,
    revoke_invitation,
)
from tenants.services.ledger import LedgerEntry, close_ledger_intervals, open_ledger_intervals
from tenants.services.limits import (
    BUDGET_FIELDS,
    USER_LIMIT_FIELDS,
    create_budget,
    delete_budget,
    delete_user_limit,
    record_budget_state,
    set_user_limit,
    update_budget,
)
from tenants.services.memberships import (
    MEMBERSHIP_FIELDS,
    ROLE_RANK,
    add_member,
    change_member_role,
    check_role,
    remove_member,
    sync_idp_memberships,
)
from tenants.services.namespaces import record_tenant_namespace
from tenants.services.quotas import (
    QUOTA_FIELDS,
    QuotaShare,
    check_within_parent,
    create_cap,
    create_quota,
    delete_quota,
    split_quota,
    update_quota,
)
from tenants.services.usage import UsageKey, apply_usage_deltas, lock_usage_rows, replace_usage

__all__ = [
    "BUDGET_FIELDS",
    "USER_LIMIT_FIELDS",
    "create_budget",
    "delete_budget",
    "delete_user_limit",
    "record_budget_state",
    "set_user_limit",
    "update_budget",
    "INVITATION_FIELDS",
    "MEMBERSHIP_FIELDS",
    "QUOTA_FIELDS",
    "ROLE_RANK",
    "LedgerEntry",
    "QuotaShare",
    "UsageKey",
    "accept_invitation",
    "accept_invitation_token",
    "add_member",
    "apply_usage_deltas",
    "change_member_role",
    "check_role",
    "check_within_parent",
    "close_ledger_intervals",
    "create_cap",
    "create_invitation",
    "create_quota",
    "decline_invitation",
    "delete_quota",
    "hash_invitation_token",
    "invitation_is_for",
    "lock_usage_rows",
    "open_ledger_intervals",
    "record_tenant_namespace",
    "remove_member",
    "replace_usage",
    "revoke_invitation",
    "sync_idp_memberships",
    "split_quota",
    "update_quota",
]
