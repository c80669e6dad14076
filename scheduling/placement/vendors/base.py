"""Generic device Fit shared by every vendor plugin (HAMi ``Fit``, shared/docs/hami.md §4.3-4.4).

A vendor plugin answers, for one container's :class:`DeviceRequest` on one node, which devices
to grant. :class:`VendorPlugin` implements HAMi's generic algorithm; vendors override small
hooks (``prepare``, ``need``, ``custom_check``, ``select_from``, ``node_score``).

Device checks, in HAMi's order (first failing check is the device's reason):
 0 ``DeviceModelInvalid`` (the console's: the device's model config does not resolve)
 1 ``CardNotHealth``  2 ``CardCordoned``  3 ``CardTypeMismatch`` (type include/exclude, mode;
   the console's ``CardTypeUnknown``: a model-excluding request meets a device whose model
   cannot be read)
 4 NUMA binding (``NumaNotFit``: a partial selection crossing NUMA nodes is discarded)
 5 ``CardUuidMismatch``  6 ``CardTimeSlicingExhausted`` (split count used up)
 7 ``ExclusiveDeviceAllocateConflict`` (device policy ``mutex`` and the device is used)
 8 cores above 100: refused in ``prepare`` (``InvalidDeviceRequest``, HAMi's words; HAMi
   clamps them to 100, as a plugin built with ``hami_parity=True`` does)
 9 memory = MiB (the console rounds it up to the model's minimum
   slice and whole memory units, :func:`scheduling.devices.resources.charged_memory_mib`),
   or percent of registered memory (integer division), or the whole card
 10 quota: not checked here (admission core's job)
 11 ``CardInsufficientMemory``  12 ``CardInsufficientCore``
 13 ``ExclusiveDeviceAllocateConflict`` (100 % cores needs an idle device)
 14 ``CardComputeUnitsExhausted`` (0-core task cannot join a device whose cores are full)
 15 vendor custom rule (``CardNotFoundCustomFilterRule``, ``CardMigTopologyInfeasible``)
 16 DRA shared counters of the card (``CardSharedCountersExhausted``; devices with
    ``counters`` only: a template grant consumes its template's counters, others their
    memory and cores)

Device ordering (HAMi ``ComputeScore``; ``Fit`` consumes the sorted list from its end):
``score = 10*(slot_w*(1+used)/count + core_w*(cores+used_cores)/total_cores +
mem_w*(mem+used_mem)/total_mem)``. binpack takes the highest score first, spread (and
topology-aware) the lowest; mutex takes the least used first. With numa binding, NUMA
groups come first (binpack: lowest NUMA id first; spread: highest first).
Deliberate differences from HAMi, documented here:
 * the request terms are always included (HAMi includes them only when the request Type
   equals the device Type, which never holds for real NVIDIA model strings, §9.2);
 * a term whose capacity is 0 (e.g. AWS Neuron devices register no memory) is left out, so
   the other terms still order the devices; HAMi scores such a device 0 whatever its usage
   (``ComputeScore``, ``pkg/scheduler/policy/gpu_policy.go:195-198``), so binpack and spread
   take the same device. A plugin built with ``hami_parity=True`` scores it 0 as HAMi does;
 * ties are deterministic: binpack prefers the higher NUMA id then the later device in
   registration order; spread prefers the later device in registration order. This is the
   order HAMi usually produces with its unstable sort (§4.4, §9.1).
 * type include/exclude matches whole tokens (``scheduling.devices.matching.type_matches``:
   ``A100`` selects ``NVIDIA A100-SXM4-80GB``, ``H20`` never ``H200``), not HAMi's
   substring; a plugin built with ``hami_parity=True`` (``place``) uses HAMi's.
 * a request above 100 % cores of a vendor whose cores HAMi clamps
   (``VendorTraits.cores_clamped``) is refused where HAMi books 100 % and logs "core limit
   can't exceed 100" (issue 29: the job would silently get other cores than it asked); a
   plugin built with ``hami_parity=True`` clamps as HAMi does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduling.devices.matching import (
    any_hami_type_matches,
    any_type_matches,
    model_key,
    type_excluded,
    type_known,
)
from scheduling.devices.resources import charged_memory_mib, cores_limit_error, template_counters
from scheduling.devices.schema import ConfigError, DeviceModelConfig
from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage, NodeInfo

__all__ = ["Usage", "FitContext", "FitResult", "VendorPlugin"]


class Usage:
    """Usage added by the pod being placed (per device uuid), on top of ``DeviceUsage.used_*``."""

    __slots__ = ("slots", "memory_mib", "cores_percent", "mig", "counters")

    def __init__(self) -> None:
        self.slots = 0
        self.memory_mib = 0
        self.cores_percent = 0
        self.mig: list[tuple[int, int]] = []  # (start, size) of pending MIG instances
        self.counters: dict[str, int] = {}


class FitContext:
    """State of fitting one pod on one node.

    Attributes:
        node: the node.
        overlay: pending usage of this pod's already fitted containers.
        policy: device policy ``binpack`` | ``spread`` | ``topology-aware`` | ``mutex``.
        weights: (slot, core, memory) device score weights.
        pod_devices: uuids granted to earlier app containers of this pod (custom rules).
        extra_score: vendor node-score terms accumulated while fitting.
        per_device_cap: most grants one device may give one request (0 = no cap; NVIDIA
            MIG spreads instances with it).
    """

    __slots__ = (
        "node",
        "overlay",
        "policy",
        "weights",
        "pod_devices",
        "extra_score",
        "per_device_cap",
    )

    def __init__(
        self,
        node: NodeInfo,
        overlay: dict[str, Usage],
        policy: str,
        weights: tuple[int, int, int],
        pod_devices: set[str],
    ) -> None:
        self.node = node
        self.overlay = overlay
        self.policy = policy
        self.weights = weights
        self.pod_devices = pod_devices
        self.extra_score = 0.0
        self.per_device_cap = 0


class FitResult:
    """Grants for one request, or the failure reason (HAMi ``GenReason`` text)."""

    __slots__ = ("grants", "reason")

    def __init__(self, grants: list[DeviceGrant] | None, reason: str = "") -> None:
        self.grants = grants
        self.reason = reason


class VendorPlugin:
    """HAMi's generic Fit, parameterised by :class:`DeviceModelConfig`.

    Args:
        configs: configs of this vendor (one per chip/model; ``chip == ""`` = the default).
        hami_parity: answer as HAMi v2.10 where the console deliberately differs (type
            selection by substring, MIG instances packed; ``manage.py place``).
    """

    vendor = ""
    #: True when some device of this vendor may serve several devices of one request (MIG)
    may_revisit = False

    def __init__(self, configs: list[DeviceModelConfig], hami_parity: bool = False) -> None:
        if not configs:
            raise ValueError(f"{type(self).__name__}: at least one config is required")
        self.configs = {c.chip: c for c in configs}
        self.default = next((c for c in configs if not c.chip), configs[0])
        self.hami_parity = hami_parity
        self._by_key: dict[str, DeviceModelConfig] = {}
        for c in configs:
            for name in (c.chip, *c.aliases):
                self._by_key.setdefault(model_key(name), c)
        self._for_type: dict[str, DeviceModelConfig] = {}
        #: some model books memory in units / minimum slices (the fast order path is off)
        self.rounds = any(c.memory_factor != 1 or c.min_slice_mib for c in configs)

    # ---- configuration helpers ---------------------------------------------------------

    def config_for(self, chip: str) -> DeviceModelConfig:
        """Config of a chip / device type: the model's own (matched by
        :func:`~scheduling.devices.matching.model_key` on its chip or an alias), else the
        vendor's default."""
        cfg = self._for_type.get(chip)
        if cfg is None:
            cfg = self.configs.get(chip) or self._by_key.get(model_key(chip)) or self.default
            self._for_type[chip] = cfg
        return cfg

    def annotation_type(self, dev: DeviceUsage) -> str:
        """TYPE field of the allocation annotation for this device (§3.2)."""
        return self.config_for(dev.type).common_word

    # ---- request normalisation (webhook-like), run once per pod in PreFilter -----------

    def prepare(self, req: DeviceRequest) -> DeviceRequest | str:
        """Normalise a request (vendor webhook defaults). Returns the request or an error."""
        if req.count < 1:
            return f"{R.INVALID_REQUEST}: {req.vendor} count must be >= 1, got {req.count}"
        if req.memory_mib < 0 or req.cores_percent < 0:
            return f"{R.INVALID_REQUEST}: negative memory or cores for {req.vendor}"
        if req.memory_percent is not None and not 0 <= req.memory_percent <= 100:
            return f"{R.INVALID_REQUEST}: memory percent {req.memory_percent} outside 0..100"
        if not self.hami_parity:
            resource = self.default.resource_cores or f"{req.vendor} cores"
            why = cores_limit_error(req.cores_percent, req.vendor, resource)
            if why:
                return f"{R.INVALID_REQUEST}: {why}"
        return req

    # ---- per-node fit ------------------------------------------------------------------

    def candidates(self, node: NodeInfo, req: DeviceRequest) -> list[DeviceUsage]:
        """Devices of the node this request may use (vendor and chip match). Under HAMi
        parity only devices whose registered type contains the request's HAMi type
        (the chip or the backend's common word, case-insensitive; ``getNodeResources``,
        ``pkg/scheduler/score.go``) are offered, as HAMi does."""
        v, chip = req.vendor, req.chip
        if chip:
            devs = [d for d in node.devices if d.vendor == v and d.type == chip]
        else:
            devs = [d for d in node.devices if d.vendor == v]
        if self.hami_parity:
            word = (chip or self.default.common_word).lower()
            devs = [d for d in devs if word in self.hami_type(d).lower()]
        return devs

    def hami_type(self, dev: DeviceUsage) -> str:
        """The device's ``Type`` as HAMi holds it (what ``getNodeResources`` matches): the
        registered type, unless the backend overwrites it when it reads the node."""
        return dev.type

    def allows_revisit(self, dev: DeviceUsage) -> bool:
        """True when one device may serve several devices of one request (MIG)."""
        return False

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        """(memory MiB, cores) this request books on ``dev`` (HAMi steps 8-9; cores above 100
        reach here only under ``hami_parity``, :meth:`prepare` refuses them otherwise)."""
        cores = req.cores_percent if req.cores_percent <= 100 else 100
        if req.memory_mib > 0:
            return self.charge(dev, req.memory_mib), cores
        pct = 100 if req.memory_percent is None else req.memory_percent
        return dev.memory_mib * pct // 100, cores

    def charge(self, dev: DeviceUsage, memory_mib: int) -> int:
        """MiB booked on ``dev`` for a request of ``memory_mib``: rounded up to the device
        model's minimum slice and whole memory units (unit 0 = 1 % of the allocatable
        memory), :func:`scheduling.devices.resources.charged_memory_mib`."""
        if not self.rounds:
            return memory_mib
        cfg = self.config_for(dev.type)
        if cfg.memory_factor == 1 and not cfg.min_slice_mib:
            return memory_mib
        try:
            return charged_memory_mib(cfg, memory_mib, dev.memory_mib)
        except ConfigError:
            return memory_mib

    def device_score(
        self, dev: DeviceUsage, req: DeviceRequest, ov: Usage | None, weights: tuple[int, int, int]
    ) -> float:
        """HAMi device score (``ComputeScore``) including this request (see module doc)."""
        mem, cores = self.need(dev, req)
        used = dev.used_slots
        umem = dev.used_memory_mib
        ucores = dev.used_cores_percent
        if ov is not None:
            used += ov.slots
            umem += ov.memory_mib
            ucores += ov.cores_percent
        sw, cw, mw = weights
        if dev.split_count and dev.cores_percent and dev.memory_mib:
            return 10.0 * (
                sw * (1 + used) / dev.split_count
                + cw * (cores + ucores) / dev.cores_percent
                + mw * (mem + umem) / dev.memory_mib
            )
        if self.hami_parity:
            return 0.0
        terms = (
            (sw, 1 + used, dev.split_count),
            (cw, cores + ucores, dev.cores_percent),
            (mw, mem + umem, dev.memory_mib),
        )
        return 10.0 * sum(w * n / total for w, n, total in terms if total)

    def order(
        self, devs: list[DeviceUsage], req: DeviceRequest, ctx: FitContext
    ) -> list[DeviceUsage]:
        """Devices in the order Fit tries them (first = taken first)."""
        ov = ctx.overlay
        w = ctx.weights
        pol = ctx.policy
        binpack = pol == "binpack"
        numa = req.numa_bind
        cls = type(self)
        fast = (
            cls.device_score is VendorPlugin.device_score
            and cls.need is VendorPlugin.need
            and not self.rounds
        )
        if fast:
            sw, cw, mw = w
            cores = req.cores_percent if req.cores_percent <= 100 else 100
            mem_fixed = req.memory_mib
            pct = 100 if req.memory_percent is None else req.memory_percent
        keyed = []
        for pos, d in enumerate(devs):
            o = ov.get(d.uuid) if ov else None
            if pol == "mutex":
                k: tuple = (d.used_slots + (o.slots if o else 0), -pos)
            else:
                if fast:
                    dm, dc, cnt = d.memory_mib, d.cores_percent, d.split_count
                    if not dm or not dc or not cnt:
                        sc = self.device_score(d, req, o, w)
                    else:
                        mem = mem_fixed if mem_fixed > 0 else dm * pct // 100
                        used, umem, ucores = d.used_slots, d.used_memory_mib, d.used_cores_percent
                        if o is not None:
                            used += o.slots
                            umem += o.memory_mib
                            ucores += o.cores_percent
                        sc = 10.0 * (
                            sw * (1 + used) / cnt
                            + cw * (cores + ucores) / dc
                            + mw * (mem + umem) / dm
                        )
                else:
                    sc = self.device_score(d, req, o, w)
                k = (-sc, -d.numa, -pos) if binpack else (sc, -pos)
            if numa:
                k = ((d.numa if binpack else -d.numa),) + k
            keyed.append((k, pos))
        keyed.sort()
        return [devs[p] for _, p in keyed]

    def type_ok(self, dev: DeviceUsage, req: DeviceRequest) -> bool:
        """Step 3: model include/exclude and mode. The console matches whole model tokens
        and refuses a device whose model cannot be read to a request that excludes models
        (:func:`~scheduling.devices.matching.type_excluded`); ``hami_parity`` keeps HAMi's
        substring test (``checkGPUtype``: ``strings.Contains`` on upper case)."""
        if self.hami_parity:
            if req.types_include and not any_hami_type_matches(dev.type, req.types_include):
                return False
            if req.types_exclude and any_hami_type_matches(dev.type, req.types_exclude):
                return False
        else:
            if req.types_include and not any_type_matches(dev.type, req.types_include):
                return False
            if type_excluded(dev.type, req.types_exclude):
                return False
        return not (req.modes and dev.mode not in req.modes)

    def custom_check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, mem: int, cores: int
    ) -> str | None:
        """Step 15 hook: vendor rule; returns a reason name or None."""
        return None

    def admit(
        self,
        dev: DeviceUsage,
        req: DeviceRequest,
        ctx: FitContext,
        extra_slots: int = 0,
        size: int = 1,
    ) -> tuple[int, Usage | None] | str:
        """Steps 5-7: uuid lists, free slots for ``size`` more (``extra_slots`` already
        taken by this request), mutex. Returns (slots in use, pending usage) or a reason."""
        if req.uuids_include and dev.uuid not in req.uuids_include:
            return R.CARD_UUID_MISMATCH
        if req.uuids_exclude and dev.uuid in req.uuids_exclude:
            return R.CARD_UUID_MISMATCH
        o = ctx.overlay.get(dev.uuid)
        used = slots_in_use(dev, ctx) + extra_slots
        if dev.split_count < used + size:
            return R.CARD_TIME_SLICING_EXHAUSTED
        if ctx.policy == "mutex" and used > 0:
            return R.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
        return used, o

    def check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, taken: list[DeviceGrant]
    ) -> list[DeviceGrant] | str:
        """Steps 5-15 for one device. Returns the grants this device gives or a reason."""
        admitted = self.admit(dev, req, ctx)
        if isinstance(admitted, str):
            return admitted
        used, o = admitted
        mem, cores = self.need(dev, req)
        umem = dev.used_memory_mib + (o.memory_mib if o else 0)
        ucores = dev.used_cores_percent + (o.cores_percent if o else 0)
        if dev.memory_mib - umem < mem:
            return R.CARD_INSUFFICIENT_MEMORY
        if dev.cores_percent - ucores < cores:
            return R.CARD_INSUFFICIENT_CORE
        if dev.cores_percent == 100 and cores == 100 and used > 0:
            return R.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
        if dev.cores_percent != 0 and ucores == dev.cores_percent and cores == 0:
            return R.CARD_COMPUTE_UNITS_EXHAUSTED
        r = self.custom_check(dev, req, ctx, mem, cores)
        if r is not None:
            return r
        g = self.grant(dev, mem, cores)
        return [g] if counters_fit(dev, g, o) else R.CARD_SHARED_COUNTERS_EXHAUSTED

    def grant(self, dev: DeviceUsage, mem: int, cores: int, **extra: Any) -> DeviceGrant:
        """The grant of ``mem`` MiB and ``cores`` on ``dev`` (with the shared counters it
        consumes when the card has ``counters``)."""
        if dev.counters and "counters" not in extra:
            extra["counters"] = self.consumed_counters(
                dev, mem, cores, str(extra.get("template", ""))
            )
        return DeviceGrant(
            dev.uuid,
            self.annotation_type(dev),
            mem,
            cores,
            dev.vendor,
            dev.index,
            model=dev.type,
            **extra,
        )

    def consumed_counters(
        self, dev: DeviceUsage, mem: int, cores: int, template: str
    ) -> tuple[tuple[str, int], ...]:
        """Counters a grant consumes: its template's (catalogue), else memory and cores."""
        tpl = (
            next((t for t in self.config_for(dev.type).templates if t.name == template), None)
            if template
            else None
        )
        used = template_counters(tpl) if tpl is not None else {"memory": mem, "cores": cores}
        return tuple(sorted((k, v) for k, v in used.items() if k in dev.counters))

    def collect_all(self, req: DeviceRequest, ctx: FitContext) -> bool:
        """True to collect every passing device and let :meth:`select_from` choose."""
        return False

    def select_from(
        self, node: NodeInfo, passing: list[list[DeviceGrant]], req: DeviceRequest, ctx: FitContext
    ) -> list[DeviceGrant] | None:
        """Choose ``req.count`` devices among all passing ones (when :meth:`collect_all`)."""
        return [g for gs in passing[: req.count] for g in gs]

    def select_failure(self, req: DeviceRequest) -> str:
        """Reason counted for the passing devices when :meth:`select_from` finds no set."""
        return R.CARD_NOT_FOUND_CUSTOM_FILTER_RULE

    def fit(self, node: NodeInfo, req: DeviceRequest, ctx: FitContext) -> FitResult:
        """HAMi ``fitInDevices`` + ``Fit`` for one request on one node.

        Steps: enough candidate devices (:meth:`_short_of_candidates`); the walk over them in
        :meth:`order` (:meth:`_take_devices`: filter each, check it, take its grants); with
        :meth:`collect_all`, :meth:`select_from` chooses among every passing device.

        Returns:
            The grants, or no grants and the HAMi ``GenReason`` text of the reasons counted.
        """
        devs = self.candidates(node, req)
        short = self._short_of_candidates(devs, req)
        if short is not None:
            return FitResult(None, short.reason + self._untyped_note(node, req, devs))
        counts: dict[str, int] = {}
        collect = self.collect_all(req, ctx)
        chosen = self._take_devices(self.order(devs, req, ctx), req, ctx, collect, counts)
        nchosen = sum(len(gs) for gs in chosen)
        if collect and nchosen >= req.count:
            grants = self.select_from(node, chosen, req, ctx)
            if grants is not None:
                return FitResult(grants)
            counts[self.select_failure(req)] = nchosen
        elif chosen and nchosen >= req.count:
            return FitResult([g for gs in chosen for g in gs])
        elif nchosen:
            counts[R.ALLOCATED_CARDS_INSUFFICIENT_REQUEST] = nchosen
        return FitResult(
            None,
            R.gen_reason(counts, len(devs))
            or f"{R.NODE_INSUFFICIENT_DEVICE}: no usable {req.chip or req.vendor}",
        )

    def _short_of_candidates(self, devs: list[DeviceUsage], req: DeviceRequest) -> FitResult | None:
        """The ``NodeInsufficientDevice`` failure when the node has fewer candidate devices
        than requested (and none of them may serve several devices of the request); else
        None."""
        if req.count > len(devs) and not (
            self.may_revisit and any(self.allows_revisit(d) for d in devs)
        ):
            return FitResult(
                None,
                f"{R.NODE_INSUFFICIENT_DEVICE}: {req.count} "
                f"{req.chip or req.vendor} requested, {len(devs)} on node",
            )
        return None

    def _untyped_note(self, node: NodeInfo, req: DeviceRequest, devs: list[DeviceUsage]) -> str:
        """Under parity, why registered devices of the vendor were not offered (their type
        does not contain the request's HAMi type); else ""."""
        if not self.hami_parity:
            return ""
        hidden = sum(1 for d in node.devices if d.vendor == req.vendor) - len(devs)
        if hidden <= 0 or req.chip:
            return ""
        word = self.default.common_word
        return (
            f" ({hidden} registered with a type without {word!r}, which HAMi does not offer:"
            " getNodeResources, pkg/scheduler/score.go:43-52)"
        )

    def _take_devices(
        self,
        ordered: list[DeviceUsage],
        req: DeviceRequest,
        ctx: FitContext,
        collect: bool,
        counts: dict[str, int],
    ) -> list[list[DeviceGrant]]:
        """Walk ``ordered``: skip a device that :meth:`_device_filter` rejects, start over
        when a NUMA-bound request crosses a NUMA node, and take the grants :meth:`check`
        gives. Without ``collect``, stop as soon as ``req.count`` grants are taken (the last
        device's grants cut to what is still needed).

        Returns:
            The grants taken, per device. Each rejection adds one to its reason in
            ``counts`` (updated in place); a NUMA restart adds the grants dropped.
        """
        chosen: list[list[DeviceGrant]] = []
        nchosen = 0
        prev_numa: int | None = None
        typed = bool(req.types_include or req.types_exclude or req.modes)
        for dev in ordered:
            r = self._device_filter(dev, req, typed)
            if r is not None:
                counts[r] = counts.get(r, 0) + 1
                continue
            if req.numa_bind and prev_numa is not None and dev.numa != prev_numa and chosen:
                counts[R.NUMA_NOT_FIT] = counts.get(R.NUMA_NOT_FIT, 0) + nchosen
                chosen = []
                nchosen = 0
            prev_numa = dev.numa
            revisit = self.may_revisit and self.allows_revisit(dev)
            taken = [g for gs in chosen for g in gs] if revisit else []
            res = self.check(dev, req, ctx, taken)
            if isinstance(res, str):
                counts[res] = counts.get(res, 0) + 1
                continue
            if not collect:
                res = res[: req.count - nchosen]
            chosen.append(res)
            nchosen += len(res)
            if not collect and nchosen >= req.count:
                break
        return chosen

    def _device_filter(self, dev: DeviceUsage, req: DeviceRequest, typed: bool) -> str | None:
        """Why ``dev`` cannot serve ``req`` whatever its usage (HAMi reason), or None: device
        error, unhealthy, cordoned, then (when ``typed``: the request names types or modes)
        type mismatch (``CardTypeUnknown`` when the request excludes models and the
        device's model cannot be read)."""
        if dev.error:
            return R.DEVICE_MODEL_INVALID
        if not dev.healthy:
            return R.CARD_NOT_HEALTH
        if dev.cordoned:
            return R.CARD_CORDONED
        if typed and not self.type_ok(dev, req):
            unknown = req.types_exclude and not self.hami_parity and not type_known(dev.type)
            return R.CARD_TYPE_UNKNOWN if unknown else R.CARD_TYPE_MISMATCH
        return None

    def node_score(self, node: NodeInfo, containers: list[list[DeviceGrant]]) -> float:
        """Vendor node-score term over the pod's grants on this node (HAMi ``ScoreNode``)."""
        return 0.0


def slots_in_use(dev: DeviceUsage, ctx: FitContext) -> int:
    """Slots of ``dev`` in use: booked ones plus those this pod's already fitted containers
    take (``ctx.overlay``), as HAMi's node copy counts them (``fitInDevices`` adds each
    container's usage before the next, ``pkg/scheduler/score.go:105-131``)."""
    o = ctx.overlay.get(dev.uuid)
    return dev.used_slots + (o.slots if o else 0)


def counters_fit(dev: DeviceUsage, grant: DeviceGrant, pending: Usage | None) -> bool:
    """True when the card's shared counters have room for the grant's consumption (on top
    of the booked ones and this pod's pending ones)."""
    for name, n in grant.counters:
        used = dev.used_counters.get(name, 0) + (pending.counters.get(name, 0) if pending else 0)
        if used + n > dev.counters.get(name, 0):
            return False
    return True


Factory = Callable[[list[DeviceModelConfig]], VendorPlugin]
