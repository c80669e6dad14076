"""Topology shapes of the API: the ``topology`` object of a job submission and its read
form, and ``GET /api/topologies/`` (issue 31; Kueue Topology-Aware Scheduling terms)."""

from __future__ import annotations

from rest_framework import serializers

from scheduling.api.serializers.fields import RejectUnknownFieldsMixin
from scheduling.models import TopologyMode
from scheduling.models.topology import LABEL_KEY_MAX
from scheduling.selectors.topology import TopologyRefused, TopologySpec, resolve_topology_spec

_LEVEL_HELP = (
    "A level of the resource group's topology: its node-label key (e.g. "
    "cloud.provider.com/topology-rack) or, when no other level shares it, its short name "
    "(the part after the last '/', or that part's last '-' word: topology-rack or rack)."
)


class TopologyInputSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """A job's topology request: at most one of ``required`` (every pod inside one domain of
    the level, or none placed), ``preferred`` (as few domains as possible from that level
    up), ``unconstrained: true`` (any nodes, ranks in domain order); ``slice_size`` with
    ``slice_level``: every ``slice_size`` consecutive pods (by rank) inside one domain of
    ``slice_level`` (Kueue ``podset-slice-required-topology`` / ``podset-slice-size``)."""

    required = serializers.CharField(
        max_length=LABEL_KEY_MAX, required=False, help_text=_LEVEL_HELP
    )
    preferred = serializers.CharField(
        max_length=LABEL_KEY_MAX, required=False, help_text=_LEVEL_HELP
    )
    unconstrained = serializers.BooleanField(required=False)
    slice_size = serializers.IntegerField(min_value=1, max_value=1024, required=False)
    slice_level = serializers.CharField(
        max_length=LABEL_KEY_MAX, required=False, help_text=_LEVEL_HELP
    )

    def validate(self, attrs):
        modes = [m for m in ("required", "preferred") if attrs.get(m)]
        if attrs.get("unconstrained"):
            modes.append("unconstrained")
        if len(modes) > 1:
            both = " and ".join(modes)
            raise serializers.ValidationError(
                {modes[1]: f"Give one of required, preferred, unconstrained (not {both})."}
            )
        if not modes and not attrs.get("slice_size"):
            raise serializers.ValidationError(
                "Give required, preferred, unconstrained: true, or a slice "
                "(slice_size, slice_level)."
            )
        mode = modes[0] if modes else TopologyMode.NONE
        return TopologySpec(
            mode=str(mode),
            level=attrs.get(mode, "") if mode in ("required", "preferred") else "",
            slice_size=attrs.get("slice_size", 0),
            slice_level=attrs.get("slice_level", ""),
        )


def resolved_topology(group, spec: TopologySpec | None, pod_count: int) -> TopologySpec:
    """``spec`` resolved against ``group``'s topology (an empty spec when none was given).

    Raises:
        serializers.ValidationError: ``{"topology": {field: [why]}}``: a request on a group
            without a topology, an unknown level (the message names the topology's levels).
    """
    if spec is None:
        return TopologySpec()
    try:
        return resolve_topology_spec(group, spec, pod_count)
    except TopologyRefused as exc:
        raise serializers.ValidationError({"topology": {exc.field: [exc.message]}}) from None


class TopologyReadSerializer(serializers.Serializer):
    """A job's or a pod set's topology request as stored (levels are label keys)."""

    mode = serializers.ChoiceField(
        choices=[m.value for m in TopologyMode], source="topology_mode", read_only=True
    )
    level = serializers.CharField(source="topology_level", read_only=True)
    slice_size = serializers.IntegerField(source="topology_slice_size", read_only=True)
    slice_level = serializers.CharField(source="topology_slice_level", read_only=True)
