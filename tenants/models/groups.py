"""Network topologies and resource groups (pools of devices with their placement policy)."""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from core.models import BaseModel
from tenants.choices import (
    ALLOWED_STRATEGY_LISTS,
    ConsolidationMode,
    DevicePolicy,
    FragmentationPolicy,
    GroupKind,
    NodePolicy,
    default_strategies,
)
from tenants.models.tenancy import slug_validator


class Topology(BaseModel):
    """A network topology: node-label keys from the widest level to the node (Kueue's
    ``Topology`` ``spec.levels[].nodeLabel``; KAI's Topology CRD), e.g.
    ``["topology.kubernetes.io/zone", "cloud.provider.com/topology-block",
    "cloud.provider.com/topology-rack", "kubernetes.io/hostname"]``; a GB200-style NVLink
    domain is the level ``nvidia.com/gpu.clique``.

    Attached to a resource group (``ResourceGroup.topology``) or to a flavor
    (``scheduling.DeviceModel.topology``, Kueue's ``ResourceFlavor.topologyName``); a job's
    topology request names one of its ``levels``. A node's domain at a level is the value
    of that label on the node; a node without the label is outside every domain of it.
    """

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    levels = models.JSONField(
        default=list,
        help_text="Node-label keys, widest level first, the node level (e.g. "
        "kubernetes.io/hostname) last.",
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "topologies"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """``levels``: a non-empty list of distinct label keys (no blanks or spaces)."""
        levels = self.levels
        if (
            not isinstance(levels, list)
            or not levels
            or not all(isinstance(k, str) and k.split() == [k] for k in levels)
        ):
            raise ValidationError(
                {"levels": "A non-empty list of node-label keys, widest level first."}
            )
        repeated = sorted({k for k in levels if levels.count(k) > 1})
        if repeated:
            raise ValidationError({"levels": f"Levels must be distinct: {', '.join(repeated)}."})


#: The window of a resource group's consolidation move budget
#: (``ResourceGroup.consolidation_max_moves_per_hour``).
CONSOLIDATION_BUDGET_WINDOW = timedelta(hours=1)


class ResourceGroup(BaseModel):
    """A pool of devices selected by device model names and/or node labels; the root cohort
    of its tenants' quotas.

    ``device_models`` lists DeviceModel names (empty = every model); ``node_selector`` is a map
    of node labels that must all match (empty = every node).

    Placement profile of the group's admission cycles: ``node_policy`` and ``device_policy``
    (HAMi's scheduler policies, HAMi defaults binpack / spread), ``fragmentation_policy``
    (FragGuard / FGD node scoring against the group's recent job shapes, or none) and
    ``pod_policy_override`` (whether a job's pod annotations ``hami.io/node-scheduler-policy``
    / ``hami.io/gpu-scheduler-policy`` override the group's policies for that job).
    Consolidation (``consolidation_enabled``, a budget of ``consolidation_max_moves_per_hour``
    moves and at most ``consolidation_max_moves`` per pending job) moves opted-in jobs to
    defragment the group (:mod:`scheduling.services.consolidation`).
    The cohort options (fair sharing and its preemption strategies, history-aware fair share,
    starvation reservation) are read by every admission cycle of the group.
    """

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    kind = models.CharField(max_length=16, choices=GroupKind.choices, default=GroupKind.SHARED)
    device_models = models.JSONField(default=list, blank=True)
    node_selector = models.JSONField(default=dict, blank=True)
    description = models.TextField(blank=True)
    node_policy = models.CharField(
        max_length=16,
        choices=NodePolicy.choices,
        default=NodePolicy.BINPACK,
        help_text="HAMi node scheduler policy: binpack fills busy nodes, spread idle ones.",
    )
    device_policy = models.CharField(
        max_length=16,
        choices=DevicePolicy.choices,
        default=DevicePolicy.SPREAD,
        help_text="HAMi GPU scheduler policy within the chosen node.",
    )
    fragmentation_policy = models.CharField(
        max_length=16,
        choices=FragmentationPolicy.choices,
        default=FragmentationPolicy.NONE,
        help_text="FragGuard/FGD: choose nodes and devices to keep free capacity usable by "
        "the group's recent job shapes (replaces the HAMi node score).",
    )
    pod_policy_override = models.BooleanField(
        default=True,
        help_text="Jobs may override the policies with the pod annotations "
        "hami.io/node-scheduler-policy and hami.io/gpu-scheduler-policy.",
    )
    fair_sharing = models.BooleanField(
        null=True,
        blank=True,
        help_text="Kueue fair sharing in this cohort (admission by dominant share, "
        "fair-sharing preemption); empty = the ADMISSION_FAIR_SHARING setting.",
    )
    preemption_strategies = models.JSONField(
        default=default_strategies,
        blank=True,
        help_text="Fair-sharing preemption strategies: [LessThanOrEqualToFinalShare, "
        "LessThanInitialShare] (default), or one of them alone.",
    )
    usage_half_life_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1.0)],
        help_text="History-aware fair share: past usage from the ledger, halved every this "
        "many seconds, orders tenants before priority; empty = off.",
    )
    reservation_after_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="Starvation protection: a queue head pending this long reserves capacity; "
        "smaller jobs then backfill only if they end (max runtime) before it can "
        "start. Empty = off.",
    )
    max_reservations = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    consolidation_enabled = models.BooleanField(
        default=False,
        help_text="Consolidation: a job that does not fit only because free capacity is "
        "fragmented may have opted-in preemptible jobs moved (restarted elsewhere) to free a "
        "whole device or node for it.",
    )
    consolidation_mode = models.CharField(
        max_length=16,
        choices=ConsolidationMode.choices,
        default=ConsolidationMode.AUTO,
        help_text="auto: carry consolidation plans out at once; propose: only show them (the "
        "pending job's reason says a plan awaits approval).",
    )
    consolidation_max_moves_per_hour = models.PositiveIntegerField(
        default=20,
        validators=[MinValueValidator(1), MaxValueValidator(10_000)],
        help_text="Move budget: at most this many jobs moved by consolidation in any hour.",
    )
    consolidation_max_moves = models.PositiveIntegerField(
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(8)],
        help_text="At most this many jobs moved to make room for one pending job "
        "(KAI scheduler's maxConsolidationPreemptees).",
    )
    max_reservation_hold_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="A reservation not admitted after this long is dropped for one cycle.",
    )
    topology = models.ForeignKey(
        Topology,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="resource_groups",
        help_text="Network topology of the group's nodes (Kueue TAS): jobs may ask their "
        "pods inside one domain of a level. Empty: the topology of the group's device "
        "models (flavors), if they name one.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not isinstance(self.device_models, list) or not all(
            isinstance(m, str) and m for m in self.device_models
        ):
            raise ValidationError({"device_models": "A list of device model names."})
        if not isinstance(self.node_selector, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.node_selector.items()
        ):
            raise ValidationError({"node_selector": "A map of label name to label value."})
        if self.preemption_strategies not in ALLOWED_STRATEGY_LISTS:
            raise ValidationError(
                {
                    "preemption_strategies": (
                        "One of " + "; ".join(str(s) for s in ALLOWED_STRATEGY_LISTS) + "."
                    )
                }
            )
