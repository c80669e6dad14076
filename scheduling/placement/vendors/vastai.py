"""Vastai (``pkg/device/vastai/device.go``; research notes §3.12).

Count-only requests (``vastaitech.com/va``); a grant books no memory and the requested
cores (0). Die mode, when the first candidate's ``custom["DeviceStrategy"]`` is ``"die"``:
every passing die is collected; 1 die -> the first; N -> dies grouped by physical card
(``custom["AIC"]``), cards with most passing dies first (stable), filled in order (HAMi
``computeBestCombination``). Under ``mutex`` a used die is refused and, in die mode, so is
an idle die of a card (AIC) with a used die (``ExclusiveDeviceAllocateConflict``;
``vastai/device.go:236-249, 274-286`` at HAMi 4707fb0); "used" counts the dies this pod's
earlier containers took (HAMi books each container on its node copy before the next,
``scheduler/score.go:105-131``), so two containers of one pod never share a card. The
occupied cards are those before this container's walk: one container may take several idle
dies of one card. Node score term: per container, the most dies on one card / the
container's dies (0 unless every die is in die mode with an AIC).
"""

from __future__ import annotations

from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage, NodeInfo
from scheduling.placement.vendors.base import FitContext, VendorPlugin, slots_in_use


def _die_mode(devs: list[DeviceUsage]) -> bool:
    return bool(devs) and devs[0].custom.get("DeviceStrategy") == "die"


class VastaiPlugin(VendorPlugin):
    """Vastai backend (vendor word ``Vastai``)."""

    vendor = "Vastai"

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        return 0, req.cores_percent

    def check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, taken: list[DeviceGrant]
    ) -> list[DeviceGrant] | str:
        admitted = self.admit(dev, req, ctx)
        if isinstance(admitted, str):
            return admitted
        if ctx.policy == "mutex" and self._card_busy(dev, req, ctx):
            return R.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
        return [self.grant(dev, 0, req.cores_percent)]

    def _card_busy(self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext) -> bool:
        """Die mode: a die of ``dev``'s card (AIC) is in use, booked or by this pod."""
        node = ctx.node
        if not _die_mode(self.candidates(node, req)) or "AIC" not in dev.custom:
            return False
        return any(
            slots_in_use(d, ctx) > 0 and d.custom.get("AIC") == dev.custom["AIC"]
            for d in node.devices
            if d.vendor == self.vendor
        )

    def collect_all(self, req: DeviceRequest, ctx: FitContext) -> bool:
        return _die_mode(self.candidates(ctx.node, req))

    def select_from(
        self, node: NodeInfo, passing: list[list[DeviceGrant]], req: DeviceRequest, ctx: FitContext
    ) -> list[DeviceGrant] | None:
        grants = [g for gs in passing for g in gs]
        if req.count == 1:
            return grants[:1]
        aic = {d.uuid: str(d.custom.get("AIC", "")) for d in node.devices}
        cards: dict[str, list[DeviceGrant]] = {}
        for g in grants:
            cards.setdefault(aic.get(g.uuid, ""), []).append(g)
        ordered = sorted(cards.values(), key=len, reverse=True)
        return [g for gs in ordered for g in gs][: req.count]

    def node_score(self, node: NodeInfo, containers: list[list[DeviceGrant]]) -> float:
        devs = {d.uuid: d for d in node.devices if d.vendor == self.vendor}
        score = 0.0
        for grants in containers:
            mine = [devs[g.uuid] for g in grants if g.uuid in devs]
            if not mine:
                continue
            if any(d.custom.get("DeviceStrategy") != "die" or "AIC" not in d.custom for d in mine):
                return 0.0
            counts: dict[str, int] = {}
            for d in mine:
                counts[str(d.custom["AIC"])] = counts.get(str(d.custom["AIC"]), 0) + 1
            score += max(counts.values()) / len(mine)
        return score


class BirenPlugin(VendorPlugin):
    """Biren (``pkg/device/biren/device.go``): count-only requests (``birentech.com/gpu``);
    like Vastai outside die mode, a grant books no memory and the requested cores (0): HAMi's
    Fit sets no ``Usedmem`` (``Fit``, biren/device.go), so the allocation reads
    ``<uuid>,Biren,0,0``. A card is exclusive through its split count (1)."""

    vendor = "Biren"

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        return 0, req.cores_percent

    def check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, taken: list[DeviceGrant]
    ) -> list[DeviceGrant] | str:
        admitted = self.admit(dev, req, ctx)
        if isinstance(admitted, str):
            return admitted
        return [self.grant(dev, 0, req.cores_percent)]
