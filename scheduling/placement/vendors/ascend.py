"""Huawei Ascend vNPU (hard split by templates, soft split by hami-vnpu-core).

Sources: ``pkg/device/ascend/device.go``, ``vnpu.go``; ``ascend-device-plugin``
``internal/server/register.go``; shared/docs/hami.md §2.4, §4.8.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage, NodeInfo
from scheduling.placement.vendors.base import FitContext, VendorPlugin


class AscendPlugin(VendorPlugin):
    """Ascend chips, one :class:`DeviceModelConfig` per chip (``chip`` = common word).

    Hard split (default): memory is rounded up to the smallest template with memory >=
    request; above the largest template but <= the chip's capacity -> the whole card
    (``memory_mib`` of the config = memoryAllocatable); above capacity -> rejected. No memory
    -> whole card. Cores are not booked (templates govern). ``count > 1`` needs whole cards.
    Soft split (``DeviceRequest.soft_split``): memory as requested, cores honoured on a
    device treated as 100 cores; the node must carry ``hami-vnpu-core: "true"`` else
    ``ModeNotFit``.
    Chip matching is exact (``Ascend910B4`` never takes ``Ascend910B4-1`` devices; HAMi
    uses a substring match, §4.5/§9.10).
    Ascend 910*: when every candidate reports a NetworkID, all passing devices are
    collected; 1 device -> the first; N -> filled from the NetworkID group with most
    candidates (ties: lowest NetworkID), then the rest in candidate order. Node score term
    ``10 x sum over containers (max devices on one NetworkID / devices)``.
    Ascend 910C (``superPod``, ``computeBestCombination910C`` ``device.go:677-733``): NPUs
    come in 2-NPU modules (module = registered index // 2); a request for 1 NPU becomes 2,
    an odd count above 1 is refused; several NPUs take whole modules whose both NPUs pass,
    module by module (lowest module first; HAMi takes full modules in map order) until the
    count is met, each module's NPUs in candidate order, else
    ``AllocatedCardsInsufficientRequest``.
    """

    vendor = "Ascend"

    def prepare(self, req: DeviceRequest) -> DeviceRequest | str:
        base = super().prepare(req)
        if isinstance(base, str):
            return base
        if not req.chip:
            return f"{R.INVALID_REQUEST}: Ascend request needs a chip (e.g. Ascend910B3)"
        cfg = self.configs.get(req.chip)
        if cfg is None:
            return f"{R.INVALID_REQUEST}: unknown Ascend chip {req.chip!r}"
        if cfg.super_pod:
            if req.count > 1 and req.count % 2:
                return (
                    f"{R.INVALID_REQUEST}: {req.chip} takes whole 2-NPU modules, "
                    f"count {req.count} is odd"
                )
            req = replace(req, count=max(2, req.count))
        if req.soft_split:
            return req
        if req.cores_percent > 0:
            return (
                f"{R.INVALID_REQUEST}: {cfg.resource_cores} is only allowed with "
                f"huawei.com/vnpu-mode: hami-core"
            )
        mem = req.memory_mib
        if mem == 0 and req.memory_percent is not None:
            mem = cfg.memory_mib * req.memory_percent // 100
        if mem == 0:
            mem = cfg.memory_mib
        else:
            tpl = next((t for t in cfg.templates if t.memory_mib >= mem), None)
            if tpl is not None:
                mem = tpl.memory_mib
            elif mem <= max(cfg.memory_capacity_mib, cfg.memory_mib):
                mem = cfg.memory_mib
            else:
                return (
                    f"{R.INVALID_REQUEST}: {req.chip} memory {mem} MiB exceeds the chip "
                    f"capacity {cfg.memory_capacity_mib} MiB"
                )
        if req.count > 1 and mem < cfg.memory_mib:
            return f"{R.INVALID_REQUEST}: vNPU not supported for multiple devices"
        return replace(req, memory_mib=mem, memory_percent=None)

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        mem, cores = super().need(dev, req)
        return mem, (cores if req.soft_split else 0)

    def custom_check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, mem: int, cores: int
    ) -> str | None:
        if req.soft_split and ctx.node.annotations.get("hami-vnpu-core", "") != "true":
            return R.MODE_NOT_FIT
        return None

    def grant(self, dev: DeviceUsage, mem: int, cores: int, **extra: Any) -> DeviceGrant:
        cfg = self.config_for(dev.type)
        if "template" not in extra:
            tpl = next((t.name for t in cfg.templates if t.memory_mib == mem), "")
            extra["template"] = tpl
        return super().grant(dev, mem, cores, **extra)

    def annotation_type(self, dev: DeviceUsage) -> str:
        return dev.type

    def _network_aware(self, node: NodeInfo, req: DeviceRequest) -> bool:
        if not req.chip.startswith("Ascend910"):
            return False
        devs = self.candidates(node, req)
        return bool(devs) and all(d.network_id is not None for d in devs)

    def _super_pod(self, req: DeviceRequest) -> bool:
        cfg = self.configs.get(req.chip)
        return cfg is not None and cfg.super_pod and req.count > 1

    def collect_all(self, req: DeviceRequest, ctx: FitContext) -> bool:
        return self._super_pod(req) or self._network_aware(ctx.node, req)

    def select_failure(self, req: DeviceRequest) -> str:
        if self._super_pod(req):
            return R.ALLOCATED_CARDS_INSUFFICIENT_REQUEST
        return super().select_failure(req)

    def select_from(
        self, node: NodeInfo, passing: list[list[DeviceGrant]], req: DeviceRequest, ctx: FitContext
    ) -> list[DeviceGrant] | None:
        grants = [g for gs in passing for g in gs]
        if self._super_pod(req):
            modules: dict[int, list[DeviceGrant]] = {}
            for g in grants:
                modules.setdefault(g.index // 2, []).append(g)
            # a module's NPUs in candidate order, as HAMi appends them
            whole = [gs for _, gs in sorted(modules.items()) if len(gs) == 2]
            chosen = [g for gs in whole for g in gs][: req.count]
            return chosen if len(chosen) == req.count else None
        if req.count == 1:
            return grants[:1]
        # network-aware selection: every candidate has a network id (_network_aware)
        net = {d.uuid: d.network_id for d in node.devices if d.network_id is not None}
        groups: dict[int, int] = {}
        for g in grants:
            groups[net[g.uuid]] = groups.get(net[g.uuid], 0) + 1
        best = min(groups, key=lambda k: (-groups[k], k))
        first = [g for g in grants if net[g.uuid] == best]
        rest = [g for g in grants if net[g.uuid] != best]
        return (first + rest)[: req.count]

    def node_score(self, node: NodeInfo, containers: list[list[DeviceGrant]]) -> float:
        net = {d.uuid: d.network_id for d in node.devices if d.vendor == "Ascend"}
        total = 0.0
        for grants in containers:
            ids = [net[g.uuid] for g in grants if g.uuid in net and g.model.startswith("Ascend910")]
            known = [i for i in ids if i is not None]
            if not ids or len(known) < len(ids):
                continue
            counts: dict[int, int] = {}
            for i in known:
                counts[i] = counts.get(i, 0) + 1
            total += max(counts.values()) / len(known)
        return 10.0 * total
