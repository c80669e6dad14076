"""The notifications page: the user's subscriptions (own jobs; their tenants' as tenant
admin; the platform's as platform admin), a form to add one, and the delivery log."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.events import EVENT_KINDS
from core.exceptions import DomainError
from notifications import selectors, services
from notifications.choices import Channel, Scope
from tenants.models import Tenant

PAGE_SIZE = 50


class SubscriptionForm(forms.Form):
    """A new subscription; the services check the scope, tenant, URL and event kinds."""

    name = forms.CharField(max_length=100)
    scope = forms.ChoiceField(choices=Scope.choices, initial=Scope.USER)
    tenant = forms.ModelChoiceField(
        queryset=Tenant.objects.none(),
        required=False,
        to_field_name="name",
        label="Tenant (tenant scope)",
    )
    channel = forms.ChoiceField(choices=Channel.choices, initial=Channel.WEBHOOK)
    url = forms.URLField(required=False, max_length=500, label="Webhook URL", assume_scheme="https")
    email = forms.EmailField(required=False, label="E-mail address")
    events = forms.MultipleChoiceField(
        choices=list(EVENT_KINDS.items()),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Events (none ticked = all of the scope)",
    )
    secret = forms.CharField(
        required=False,
        min_length=16,
        max_length=256,
        widget=forms.PasswordInput,
        label="Signing secret (optional, stored encrypted)",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        admin_of = None if user.is_superuser else selectors.admin_tenant_ids(user)
        tenants = Tenant.objects.order_by("name")
        self.fields["tenant"].queryset = (
            tenants if admin_of is None else tenants.filter(pk__in=admin_of)
        )
        if not user.is_superuser:
            self.fields["scope"].choices = [c for c in Scope.choices if c[0] != Scope.PLATFORM]


@login_required
def notifications_page(request):
    """List and add subscriptions; the delivery log of every visible subscription."""
    user = request.user
    form = SubscriptionForm(request.POST or None, user=user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.create_subscription(
                user=user,
                name=data["name"],
                scope=data["scope"],
                tenant=data["tenant"],
                channel=data["channel"],
                url=data["url"],
                email=data["email"],
                events=data["events"],
                secret=data["secret"],
            )
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, f"Subscription {data['name']} added.")
            return redirect("dashboards:notifications")
    deliveries = Paginator(selectors.visible_deliveries(user), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "dashboards/notifications.html",
        {
            "form": form,
            "subscriptions": selectors.visible_subscriptions(user).order_by("pk"),
            "page": deliveries,
        },
    )


@login_required
@require_POST
def notifications_action(request, pk: int):
    """``action=test`` (send a test delivery), ``toggle`` (enable/disable) or ``delete``."""
    sub = get_object_or_404(selectors.visible_subscriptions(request.user), pk=pk)
    action = request.POST.get("action")
    try:
        if action == "test":
            services.send_test(sub, user=request.user)
            messages.success(request, f"Test delivery queued for {sub.name}.")
        elif action == "toggle":
            services.update_subscription(
                sub, user=request.user, changes={"enabled": not sub.enabled}
            )
        elif action == "delete":
            services.delete_subscription(sub, user=request.user)
            messages.success(request, f"Subscription {sub.name} deleted.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("dashboards:notifications")
