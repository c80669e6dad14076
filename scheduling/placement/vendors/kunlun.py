"""Kunlunxin XPU (whole) and vXPU (``pkg/device/kunlun/device.go``, ``vdevice.go``,
``topo.go``; shared/docs/hami.md §2.9, §4.8).

* ``Kunlun`` (whole XPU): only idle XPUs (requests book memory 100 %, cores 100) and only
  counts 1, 2, 4, 8. An 8-XPU node is two wings (indices 0-3 and 4-7). Count 8 takes all 8.
  For 1/2/4, slot sizes ``s = count..4`` are scanned and the first wing (lower wing first)
  whose free count equals ``[1, 3, 2, 4][s-1]`` (count 1) or ``s`` (counts 2, 4) gives its
  lowest free indices; otherwise the cross-wing sets are tried in order: pairs 0-4, 1-5,
  2-6, 3-7 (count 2) or 0-1-4-5, 2-3-6-7, 0-2-4-6, 1-3-5-7, 0-3-4-7, 1-2-5-6 (count 4).
* Node score term (HAMi ``ScoreNode``/``calcscore``, ``topo.go:50-97``): 0 unless every
  Kunlun device of the node has HAMi's ``kunlun`` TYPE; ``prev`` = indices of devices used
  before the pod, ``cur`` = the pod's indices; ``bubbles(t)`` = 1 for none, else
  ``g(left) + g(right)`` over the wings (indices < 4 / >= 4) with ``g(4) = 0``, ``g(1) = 2``,
  else 1; the term is 3000 / 2000 / 1000 / 0 for ``bubbles(cur) - bubbles(prev)`` = -1 / 0 /
  1 / 2, else 1000 (binpack keeps the highest node score, spread the lowest).
* ``KunlunVXPU``: memory rounded up to 24576 / 49152 / 98304 MiB (config templates), cores
  = memory x 100 / 98304; a partly used vXPU only takes slices of the size already on it
  (``CardNotFoundCustomFilterRule``). One slice goes where the device policy says (binpack:
  the fullest XPU that fits, spread: the emptiest), as for every other vendor; several
  slices are chosen by the wing walk (a wing by its XPUs' indices, inside it the XPUs in
  the policy's order).

HAMi (``hami_parity``, ``manage.py place``) walks the wings over its *policy-sorted* device
list (``score.go:89-105`` passes ``sort.Sort(node.Devices)``'s order to ``Fit``):
``graghSelect`` counts positions 0-3 as the lower wing and ``devicepick`` takes the
fitting devices from the wing's first position on (``topo.go:208-268``), while the generic
``Fit`` takes from the end of that list. Whole XPUs and vXPU slices are walked that way
under parity. For one vXPU slice this turns the policies round: spread's list starts with
the busiest XPU, so HAMi's spread takes the used XPU and binpack an idle one; the console's
own cycle does not (docs/devices.md).
"""

from __future__ import annotations

from dataclasses import replace

from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage, NodeInfo
from scheduling.placement.vendors.base import FitContext, VendorPlugin

_CROSS = {
    2: ((0, 4), (1, 5), (2, 6), (3, 7)),
    4: ((0, 1, 4, 5), (2, 3, 6, 7), (0, 2, 4, 6), (1, 3, 5, 7), (0, 3, 4, 7), (1, 2, 5, 6)),
}


class KunlunPlugin(VendorPlugin):
    """Whole-XPU backend (vendor word ``Kunlun``)."""

    vendor = "Kunlun"

    def prepare(self, req: DeviceRequest) -> DeviceRequest | str:
        base = super().prepare(req)
        if isinstance(base, str):
            return base
        if req.count not in (1, 2, 4, 8):
            return f"{R.INVALID_REQUEST}: kunlunxin.com/xpu count must be 1, 2, 4 or 8"
        return replace(req, memory_mib=0, memory_percent=100, cores_percent=100)

    def collect_all(self, req: DeviceRequest, ctx: FitContext) -> bool:
        return True

    def select_from(
        self, node: NodeInfo, passing: list[list[DeviceGrant]], req: DeviceRequest, ctx: FitContext
    ) -> list[DeviceGrant] | None:
        by_index = {g.index: g for gs in passing for g in gs}
        free = set(by_index)
        n = req.count
        if n not in (1, 2, 4, 8):  # graghSelect has no walk for other counts
            return None
        if n == 8:
            return [by_index[i] for i in range(8)] if free >= set(range(8)) else None
        wings = self.wings(node, passing, req, ctx)
        for s in range(n, 5):
            want = [1, 3, 2, 4][s - 1] if n == 1 else s
            for w in wings:
                if len(w) == want:
                    return w[:n]
        for combo in _CROSS.get(n, ()):
            if free.issuperset(combo):
                return [by_index[i] for i in combo]
        return None

    def wings(
        self, node: NodeInfo, passing: list[list[DeviceGrant]], req: DeviceRequest, ctx: FitContext
    ) -> list[list[DeviceGrant]]:
        """The passing XPUs of the lower and the upper wing, each in the order the walk
        takes them: by index (console), or HAMi's positions in its policy-sorted list
        (``hami_parity``: the reverse of :meth:`order`, positions 0-3 = the lower wing)."""
        grants = [g for gs in passing for g in gs]
        if self.hami_parity:
            by_uuid = {g.uuid: g for g in grants}
            listed = [d.uuid for d in reversed(self.order(self.candidates(node, req), req, ctx))]
            return [[by_uuid[u] for u in part if u in by_uuid] for part in (listed[:4], listed[4:])]
        return [sorted((g for g in grants if g.index // 4 == w), key=self.wing_key) for w in (0, 1)]

    def wing_key(self, grant: DeviceGrant) -> int:
        """Order of a wing's XPUs in the console's walk: whole XPUs (all idle) by index."""
        return grant.index

    def node_score(self, node: NodeInfo, containers: list[list[DeviceGrant]]) -> float:
        devs = [d for d in node.devices if d.vendor == self.vendor]
        word = "kunlun"
        if any(word not in self.annotation_type(d).lower() for d in devs):
            return 0.0
        mine = {d.uuid for d in devs}
        cur = {g.index for gs in containers for g in gs if g.uuid in mine}
        if not cur:
            return 0.0
        prev = {d.index for d in devs if d.used_slots > 0}
        return kunlun_topology_score(prev, cur)


def _bubbles(indices: set[int]) -> int:
    left = sum(1 for i in indices if i < 4)
    right = len(indices) - left
    if not left and not right:
        return 1
    return sum(0 if n == 4 else 2 if n == 1 else 1 for n in (left, right))


def kunlun_topology_score(prev: set[int], cur: set[int]) -> float:
    """HAMi ``calcscore`` (module doc)."""
    return {-1: 3000.0, 0: 2000.0, 1: 1000.0, 2: 0.0}.get(_bubbles(cur) - _bubbles(prev), 1000.0)


class KunlunVXPUPlugin(VendorPlugin):
    """vXPU backend (vendor word ``KunlunVXPU``)."""

    vendor = "KunlunVXPU"

    def prepare(self, req: DeviceRequest) -> DeviceRequest | str:
        base = super().prepare(req)
        if isinstance(base, str):
            return base
        cfg = self.default
        full = cfg.memory_mib or 98304
        mem = req.memory_mib
        if mem == 0 and req.memory_percent is not None:
            mem = full * req.memory_percent // 100
        if mem == 0:
            mem = full
        tpl = next((t for t in cfg.templates if t.memory_mib >= mem), None)
        if tpl is None:
            return f"{R.INVALID_REQUEST}: vXPU memory {mem} MiB exceeds {full} MiB"
        return replace(
            req,
            memory_mib=tpl.memory_mib,
            memory_percent=None,
            cores_percent=tpl.memory_mib * 100 // full,
        )

    def custom_check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, mem: int, cores: int
    ) -> str | None:
        o = ctx.overlay.get(dev.uuid)
        slots = dev.used_slots + (o.slots if o else 0)
        umem = dev.used_memory_mib + (o.memory_mib if o else 0)
        if slots and umem // slots != mem:
            return R.CARD_NOT_FOUND_CUSTOM_FILTER_RULE
        return None

    def collect_all(self, req: DeviceRequest, ctx: FitContext) -> bool:
        return req.count > 1 or self.hami_parity

    select_from = KunlunPlugin.select_from
    wings = KunlunPlugin.wings

    def wing_key(self, grant: DeviceGrant) -> int:
        """A wing's vXPUs keep the policy's order (the walk's order of ``passing``)."""
        return 0
