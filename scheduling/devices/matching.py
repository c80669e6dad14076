"""Type strings: normalisation and the two matching rules.

HAMi registers model strings as the vendor tools print them (``NVIDIA A100-SXM4-80GB``,
``NVIDIA-Tesla T4``, ``Ascend910B4-1``, ``K100_AI``) and selects by case-insensitive
**substring** (``CheckType``, ``pkg/device/devices.go:693-738``), so ``H20`` also selects
``NVIDIA H200`` and ``910B4`` also ``Ascend910B4-1``. The console matches on **whole tokens**
instead (a deliberate difference, docs/devices.md):

* :func:`type_tokens`: upper-case, split on space ``-`` ``_`` ``/``; the leading vendor
  prefixes are dropped (``NVIDIA``, ``HUAWEI``, ``ASCEND`` also when glued to the model as
  in ``Ascend910B3``, ``HYGON``/``DCU``, ``CAMBRICON``, ...; all of them, so HAMi's long
  NVIDIA form ``NVIDIA-NVIDIA H20``, ``"NVIDIA-" + the NVML name``, is the model ``H20`` like
  ``NVIDIA H20``) and then a ``TESLA`` brand word, as long as something remains. This is the
  one normalisation (vendor prefix, case, spaces): model keys, the console's matching and
  the catalogue's lookups all go through it.
* :func:`type_known`: False for a type that names no model (empty, or only a vendor or
  backend word such as HAMi's ``MLU``, ``GCU``, ``Metax-GPU`` of devices registered from
  node capacity without a model label); :func:`type_excluded` refuses such a device to a
  request that excludes models (it cannot be verified), while a request without a type
  constraint takes it.
* :func:`type_matches`: the wanted tokens equal the first tokens of the device type, and the
  device token that follows (if any) is not a bare number: ``A100`` matches ``NVIDIA
  A100-SXM4-80GB``, ``H20`` never matches ``H200``, ``910B4`` never matches ``910B4-1``.
* :func:`model_key`: the canonical key two spellings of one model share
  (``NVIDIA-A100-SXM4-80GB`` and ``NVIDIA A100-SXM4-80GB`` -> ``A100-SXM4-80GB``).
* :func:`hami_type_matches`: HAMi's substring rule, for ``place`` parity (HAMi's current
  ``checkGPUtype`` in ``pkg/device/nvidia/device.go`` still upper-cases both sides and tests
  ``strings.Contains``, so in ``place`` ``H20`` names an ``NVIDIA-NVIDIA H200`` too).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "type_tokens",
    "model_key",
    "type_matches",
    "any_type_matches",
    "hami_type_matches",
    "any_hami_type_matches",
    "type_known",
    "type_excluded",
    "GENERIC_TYPE_WORDS",
]

_SPLIT = re.compile(r"[\s\-_/]+")
_PREFIXES = (
    "NVIDIA",
    "HUAWEI",
    "ASCEND",
    "CAMBRICON",
    "HYGON",
    "DCU",
    "METAX",
    "ILUVATAR",
    "ENFLAME",
    "MTHREADS",
    "KUNLUNXIN",
    "AMD",
    "VASTAI",
    "BIREN",
)
_GLUED = re.compile(r"^ASCEND(?=\d)")
_BRANDS = ("TESLA",)
GENERIC_TYPE_WORDS = frozenset(
    {
        *_PREFIXES,
        "GPU",
        "SGPU",
        "MLU",
        "NPU",
        "GCU",
        "XPU",
        "VXPU",
        "KUNLUN",
        "AWSNEURON",
        "NEURON",
        "UNKNOWN",
    }
)
"""Normalised words that name a vendor or a HAMi backend, never a model: the type of a device
whose model cannot be read (HAMi's common word, e.g. ``MLU``, ``GCU``, ``Metax-GPU`` ->
``GPU``, ``kunlun``, ``AWSNeuron``)."""


@lru_cache(maxsize=4096)
def type_tokens(value: str) -> tuple[str, ...]:
    """Normalised tokens of a type string (module doc). ``""`` -> ``()``."""
    tokens = [t for t in _SPLIT.split(value.strip().upper()) if t]
    while len(tokens) > 1 and tokens[0] in _PREFIXES:
        tokens = tokens[1:]
    if tokens and _GLUED.match(tokens[0]):
        tokens[0] = tokens[0][len("ASCEND") :]
    if len(tokens) > 1 and tokens[0] in _BRANDS:
        tokens = tokens[1:]
    return tuple(tokens)


def type_known(device_type: str) -> bool:
    """True when ``device_type`` names a model: not empty and not only a vendor / backend
    word (:data:`GENERIC_TYPE_WORDS`)."""
    tokens = type_tokens(device_type)
    return bool(tokens) and not (len(tokens) == 1 and tokens[0] in GENERIC_TYPE_WORDS)


def type_excluded(device_type: str, excluded: tuple[str, ...] | list[str]) -> bool:
    """The console's ``nouse`` rule: True when ``excluded`` is not empty and the device is
    one of those models (:func:`type_matches`) or its model cannot be read
    (:func:`type_known`: it cannot be verified not to be one)."""
    if not excluded:
        return False
    return not type_known(device_type) or any_type_matches(device_type, excluded)


def model_key(value: str) -> str:
    """Canonical key of a model name or type string (``"A100-SXM4-80GB"``)."""
    return "-".join(type_tokens(value))


def type_matches(device_type: str, wanted: str) -> bool:
    """Whole-token match of a wanted (short) model name against a device type (module doc)."""
    want = type_tokens(wanted)
    have = type_tokens(device_type)
    n = len(want)
    if not n or have[:n] != want:
        return False
    return len(have) == n or not have[n].isdigit()


def any_type_matches(device_type: str, wanted: tuple[str, ...] | list[str]) -> bool:
    """True when some name of ``wanted`` matches ``device_type`` (:func:`type_matches`)."""
    return any(type_matches(device_type, w) for w in wanted)


def hami_type_matches(device_type: str, wanted: str) -> bool:
    """HAMi ``CheckType``: the trimmed wanted name is a case-insensitive substring."""
    w = wanted.strip().upper()
    return bool(w) and w in device_type.upper()


def any_hami_type_matches(device_type: str, wanted: tuple[str, ...] | list[str]) -> bool:
    """True when some name of ``wanted`` matches by :func:`hami_type_matches`."""
    return any(hami_type_matches(device_type, w) for w in wanted)
