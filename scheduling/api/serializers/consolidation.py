"""The consolidation preview of a job (``GET /api/jobs/<id>/consolidation-plan/``, issue 31):
read-only, rendered from :class:`scheduling.services.consolidation_preview.ShownPreview`."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class ConsolidationTargetSerializer(serializers.Serializer):
    level = serializers.CharField(help_text="Topology label key of the domain emptied.")
    domain = serializers.CharField(help_text='The domain, e.g. "zone-a/block-0/rack-1".')


class ConsolidationPlanMoveSerializer(serializers.Serializer):
    job = serializers.IntegerField(source="job_id")
    job_name = serializers.CharField()
    from_node = serializers.CharField(help_text="Its pods' nodes now, in pod order.")
    to_node = serializers.CharField(help_text="Its pods' nodes after the move.")


class ConsolidationPlanSerializer(serializers.Serializer):
    """What consolidation would move for the job now, before anything moves."""

    plannable = serializers.BooleanField(source="preview.plannable")
    reason = serializers.CharField(
        source="preview.reason", help_text='Why there is no plan ("" when there is one).'
    )
    target = serializers.SerializerMethodField()
    moves = ConsolidationPlanMoveSerializer(many=True, help_text="Moves of jobs you may read.")
    other_tenants = serializers.IntegerField(
        help_text="Moved jobs of tenants you may not read (only counted)."
    )
    summary = serializers.CharField(help_text='e.g. "job a (n0 -> n1); 2 jobs of other tenants".')

    @extend_schema_field(ConsolidationTargetSerializer(allow_null=True))
    def get_target(self, shown) -> dict | None:
        preview = shown.preview
        if not preview.domain:
            return None
        return ConsolidationTargetSerializer(preview).data
