"""Serializer fields shared by the apps' APIs."""

from __future__ import annotations

from rest_framework import serializers

from core.words import canonical_choice


class WordChoiceField(serializers.ChoiceField):
    """A choice among words (``binpack`` | ``spread``), taken in any case and with stray
    whitespace (``" Spread "`` is stored as ``spread``, :func:`core.words.canonical_choice`);
    any other value is a field error naming the valid words."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            word = canonical_choice(data, self.choice_strings_to_values)
            if word is not None:
                return self.choice_strings_to_values[word]
        words = ", ".join(self.choice_strings_to_values)
        raise serializers.ValidationError(f"{data!r} is not one of {words}.")
