"""Words of a closed set, matched as people type them: case and surrounding whitespace do not
matter (``" Spread "`` is ``spread``, ``?vendor=nvidia`` is ``NVIDIA``).

The apps' pure cores cannot import ``core``; scheduling's HAMi policy words have their own
normaliser (``scheduling.devices.policies.policy_word``), and a test keeps the two equal on
those words.
"""

from __future__ import annotations

from collections.abc import Iterable


def canonical_choice(value: object, valid: Iterable[str]) -> str | None:
    """The word of ``valid`` that ``value`` names ignoring case and surrounding whitespace,
    spelled as in ``valid``; None when it names none."""
    wanted = str(value).strip().lower()
    for word in valid:
        if word.lower() == wanted:
            return word
    return None
