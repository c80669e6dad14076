"""Fields and a mixin shared by the input serializers of the scheduling API."""

from __future__ import annotations

from rest_framework import serializers

from scheduling.choices import VENDORS, canonical_vendor


class VendorField(serializers.CharField):
    """A vendor word of :data:`scheduling.choices.VENDORS`, matched case-insensitively and
    stored as spelled there; an unknown word is a field error listing the valid ones."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        canonical = canonical_vendor(value)
        if canonical is None:
            raise serializers.ValidationError(
                f"unknown vendor {value!r}; valid values: {', '.join(VENDORS)} (any case)"
            )
        return canonical


class RejectUnknownFieldsMixin:
    """A key the serializer does not know is a field error (``"Unknown field."``), not
    silently dropped: a typo such as ``min_pod`` would otherwise run a different job."""

    def to_internal_value(self, data):
        unknown = (
            sorted(str(k) for k in data if k not in self.fields) if isinstance(data, dict) else []
        )
        errors = {}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            errors.update(exc.detail)
        errors.update({key: ["Unknown field."] for key in unknown})
        if errors:
            raise serializers.ValidationError(errors)
        return value
