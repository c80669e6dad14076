"""Tenant page (members, queues, quota) and the invitee's invitations page.

Membership changes go through ``tenants.services``: a tenant admin invites a user by
username or e-mail (the message is the same whether or not the user exists), changes roles
and removes members; a platform admin may also add an existing user directly. The invitee
sees open invitations at ``/account/invitations/`` (linked from every page while any are
open) and accepts or declines them.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from console.dashboards import charts, trends
from console.dashboards.forms import InviteForm, MemberForm, RoleForm
from console.dashboards.team_limits import limits_context
from core.exceptions import DomainError
from scheduling.selectors.quota_board import quota_board
from tenants import services
from tenants.models import Invitation, Membership, Tenant
from tenants.selectors import (
    admin_tenant_ids,
    get_user_tenant_ids,
    get_visible_tenant_ids,
    pending_invitations_for,
)

MAX_ID = 2**63 - 1


def _posted_id(request, name: str) -> int | None:
    """The positive integer id posted as ``name``; None when it is not one."""
    raw = request.POST.get(name, "")
    if not raw.isdigit() or int(raw) < 1 or int(raw) > MAX_ID:
        return None
    return int(raw)


def _bad_id(name: str) -> HttpResponseBadRequest:
    return HttpResponseBadRequest(f"{name}: a positive integer id is required.")


def _remove(request, tenant):
    pk = _posted_id(request, "remove")
    if pk is None:
        return _bad_id("remove")
    membership = get_object_or_404(Membership, pk=pk, tenant=tenant)
    services.remove_member(membership, actor=request.user, source="ui")
    messages.success(request, f"{membership.user.username} removed.")
    return None


def _revoke(request, tenant):
    pk = _posted_id(request, "revoke")
    if pk is None:
        return _bad_id("revoke")
    invitation = get_object_or_404(Invitation, pk=pk, tenant=tenant)
    try:
        services.revoke_invitation(invitation, actor=request.user, source="ui")
        messages.success(request, f"Invitation of {invitation.invitee} revoked.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return None


def _change_role(request, tenant):
    form = RoleForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("membership and role are required.")
    membership = get_object_or_404(Membership, pk=form.cleaned_data["membership"], tenant=tenant)
    services.change_member_role(
        membership, role=form.cleaned_data["role"], actor=request.user, source="ui"
    )
    messages.success(request, f"{membership.user.username} is now {form.cleaned_data['role']}.")
    return None


def _invite(request, tenant, form):
    invitation, token = services.create_invitation(
        tenant=tenant,
        invitee=form.cleaned_data["username"],
        role=form.cleaned_data["role"],
        actor=request.user,
        source="ui",
    )
    link = request.build_absolute_uri(reverse("dashboards:invitations")) + f"?token={token}"
    messages.success(
        request,
        (
            f"Invitation for {invitation.invitee} as {invitation.role} recorded, valid until "
            f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC. If such a user exists they see it after "
            f"logging in; you may also send them this link (shown once): {link}"
        ),
    )


def _add_directly(request, tenant, form):
    services.add_member(
        tenant=tenant,
        user=form.user,
        role=form.cleaned_data["role"],
        actor=request.user,
        source="ui",
    )
    messages.success(request, f"{form.user.username} is now {form.cleaned_data['role']}.")


def _post(request, tenant, invite_form, add_form):
    """Carry out one admin action; returns a response (redirect or 400), or None when a
    form is invalid and the page should be shown again with its errors."""
    action = request.POST.get("action", "invite")
    if "remove" in request.POST:
        failed = _remove(request, tenant)
    elif "revoke" in request.POST:
        failed = _revoke(request, tenant)
    elif action == "role":
        failed = _change_role(request, tenant)
    elif action == "add" and request.user.is_superuser:
        if not add_form.is_valid():
            return None
        failed = _add_directly(request, tenant, add_form)
    elif action == "invite":
        if not invite_form.is_valid():
            return None
        failed = _invite(request, tenant, invite_form)
    else:
        return HttpResponseBadRequest("Unknown action.")
    return failed or redirect("dashboards:team", name=tenant.name)


@login_required
def team(request, name: str):
    """A tenant's members, open invitations, queues, quota and the tenants below it; tenant
    admins invite, re-role and remove members; platform admins may also add a user directly.
    Opens for whoever may read the tenant (``get_visible_tenant_ids``: a parent tenant's
    admin reads the tenants below, without their member list); others get 404."""
    visible = get_visible_tenant_ids(request.user)
    tenants = Tenant.objects.select_related("parent")
    tenant = get_object_or_404(
        tenants if visible is None else tenants.filter(pk__in=visible), name=name
    )
    member_of = get_user_tenant_ids(request.user)
    is_member = member_of is None or tenant.pk in member_of
    children = tenant.children.order_by("name")
    admin_ids = admin_tenant_ids(request.user)
    is_admin = admin_ids is None or tenant.pk in admin_ids
    posted = request.POST if request.method == "POST" else None
    invite_form = InviteForm(
        posted if posted and posted.get("action", "invite") == "invite" else None
    )
    add_form = MemberForm(posted if posted and posted.get("action") == "add" else None)
    if request.method == "POST":
        if not is_admin:
            raise PermissionDenied("Only tenant admins manage members.")
        response = _post(request, tenant, invite_form, add_form)
        if response is not None:
            return response
    range_key = charts.pick_range(request.GET.get("range"))
    start, end = trends.window(range_key)
    return render(
        request,
        "dashboards/team.html",
        {
            "range": range_key,
            "quota_charts": trends.tenant_quota_charts(tenant, start, end),
            "tenant": tenant,
            "is_admin": is_admin,
            "form": invite_form,
            "add_form": add_form,
            # members are shown to the tenant's own members, as GET /api/members/ does
            "is_member": is_member,
            "members": tenant.memberships.select_related("user").order_by("user__username")
            if is_member
            else [],
            "children": children if visible is None else children.filter(pk__in=visible),
            "invitations": tenant.invitations.filter(
                accepted_at__isnull=True, revoked_at__isnull=True
            )
            .select_related("created_by")
            .order_by("invitee")
            if is_admin
            else [],
            "role_form": RoleForm(),
            "queues": tenant.queues.select_related("resource_group").order_by("name"),
            "boards": quota_board({tenant.pk}),
            **limits_context(request, tenant),
        },
    )


@login_required
def invitations(request):
    """Open invitations addressed to the user; accept or decline them. ``?token=`` (the
    link an inviter may send) highlights the matching invitation."""
    token = request.GET.get("token", "")
    token_hash = services.hash_invitation_token(token) if token else ""
    return render(
        request,
        "dashboards/invitations.html",
        {"invitations": list(pending_invitations_for(request.user)), "token_hash": token_hash},
    )


@login_required
@require_POST
def invitation_answer(request, pk: int, answer: str):
    """Accept or decline one invitation addressed to the user (anyone else: 404)."""
    if answer not in ("accept", "decline"):
        raise Http404("No such answer.")
    invitation = get_object_or_404(pending_invitations_for(request.user), pk=pk)
    try:
        if answer == "accept":
            services.accept_invitation(invitation, user=request.user, source="ui")
            messages.success(request, f"You are now {invitation.role} in {invitation.tenant}.")
            return redirect("dashboards:team", name=invitation.tenant.name)
        services.decline_invitation(invitation, user=request.user, source="ui")
        messages.success(request, f"Invitation to {invitation.tenant} declined.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("dashboards:invitations")
