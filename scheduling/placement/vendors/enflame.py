"""Enflame whole GCU (``pkg/device/enflame/gcu.go``) and DRS shared GCUs
(``pkg/device/enflame/device.go``; research notes §3.7).

* ``Enflame`` (whole GCU, HAMi TYPE ``GCU``): devices have split count 1 and requests book
  the whole card (memory 100 %, cores 100), so only idle cards pass.
* ``EnflameDRS`` (TYPE ``Enflame``): a card of ``split_count`` slices offers the node's DRS
  profiles (``DeviceUsage.custom["profiles"]`` ``{"3g.20gb": "<id>"}``, ``custom["maxSlice"]``;
  from ``enflame.com/gcu-drs-capacity``). The profile is chosen once per node from every
  card's profiles, sorted by (size, GB), with cores ``ceil(size*100/maxSlice)``: a direct
  request (``DeviceRequest.slices`` = ``enflame.com/drs-gcu``) takes the profile of exactly
  that size; a request by spec (memory MiB -> whole GB, cores percent) the first profile
  with GB >= memory and cores >= cores. No profile -> ``ModeNotFit``. A card then needs the
  profile's memory (GB x 1024 MiB) and cores free; the grant books them and ``size`` slots.
  Deliberate difference: HAMi only checks ``count <= used`` (a 6-slice card with 5 used
  slices still takes a 3-slice profile); the console needs ``used + size <= count``.
"""

from __future__ import annotations

import math
import re

from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage, NodeInfo
from scheduling.placement.vendors.base import FitContext, VendorPlugin

_PROFILE = re.compile(r"^\s*(\d+)g\.(\d+)gb\s*$", re.IGNORECASE)


class EnflamePlugin(VendorPlugin):
    """Enflame whole-GCU backend (vendor word ``Enflame``)."""

    vendor = "Enflame"


def drs_profiles(node: NodeInfo, vendor: str = "EnflameDRS") -> list[tuple[str, int, int, int]]:
    """``[(name, size, GB, cores percent)]`` offered on the node, sorted by (size, GB)."""
    devs = [d for d in node.devices if d.vendor == vendor]
    max_slice = max((int(d.custom.get("maxSlice", 0) or 0) for d in devs), default=0)
    seen: dict[str, tuple[int, int]] = {}
    for d in devs:
        for name in d.custom.get("profiles") or {}:
            m = _PROFILE.match(str(name))
            if m and int(m[1]) > 0 and int(m[2]) > 0:
                seen[str(name)] = (int(m[1]), int(m[2]))
    if max_slice <= 0:
        max_slice = max((s for s, _ in seen.values()), default=0)
    if max_slice <= 0:
        return []
    return sorted(
        ((n, s, gb, math.ceil(s * 100 / max_slice)) for n, (s, gb) in seen.items()),
        key=lambda p: (p[1], p[2], p[0]),
    )


def pick_drs_profile(
    profiles: list[tuple[str, int, int, int]], req: DeviceRequest
) -> tuple[str, int, int, int] | None:
    """HAMi ``selectProfileByRequest`` over :func:`drs_profiles`."""
    if req.slices:
        return next((p for p in profiles if p[1] == req.slices), None)
    gb = math.ceil(req.memory_mib / 1024) if req.memory_mib > 0 else 0
    if req.drs_memory > 0 and profiles:  # as the Pod wrote it: GB, or MiB when large
        raw, max_gb = req.drs_memory, profiles[-1][2]
        gb = raw if raw <= 2 * max_gb else math.ceil(raw / 1024)
    for p in profiles:
        if (gb and p[2] < gb) or (req.cores_percent and p[3] < req.cores_percent):
            continue
        return p
    return None


class EnflameDRSPlugin(VendorPlugin):
    """Enflame DRS backend (vendor word ``EnflameDRS``; one card per request)."""

    vendor = "EnflameDRS"

    def prepare(self, req: DeviceRequest) -> DeviceRequest | str:
        base = super().prepare(req)
        if isinstance(base, str):
            return base
        if req.count != 1:
            return f"{R.INVALID_REQUEST}: an Enflame DRS request takes one card, got {req.count}"
        if not (req.slices or req.memory_mib or req.drs_memory or req.cores_percent):
            return f"{R.INVALID_REQUEST}: Enflame DRS needs drs-gcu, gcu-memory or gcu-core"
        if req.cores_percent > 100:
            return f"{R.INVALID_REQUEST}: enflame.com/gcu-core {req.cores_percent} above 100"
        return req

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        gb = math.ceil(req.memory_mib / 1024) if req.memory_mib > 0 else 0
        return gb * 1024, req.cores_percent

    def check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, taken: list[DeviceGrant]
    ) -> list[DeviceGrant] | str:
        prof = pick_drs_profile(drs_profiles(ctx.node, self.vendor), req)
        if prof is None:
            return R.MODE_NOT_FIT
        name, size, gb, cores = prof
        admitted = self.admit(dev, req, ctx, size=size)
        if isinstance(admitted, str):
            return admitted
        _, o = admitted
        umem = dev.used_memory_mib + (o.memory_mib if o else 0)
        if dev.memory_mib - umem < gb * 1024:
            return R.CARD_INSUFFICIENT_MEMORY
        ucores = dev.used_cores_percent + (o.cores_percent if o else 0)
        if dev.cores_percent and dev.cores_percent - ucores < cores:
            return R.CARD_INSUFFICIENT_CORE
        return [self.grant(dev, gb * 1024, cores, template=name, slices=size)]
