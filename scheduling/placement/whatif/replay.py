"""The replay engine of the what-if page and the benchmarks: one trace policy on one cluster
snapshot, placing and booking pods through the placement core (``place`` / ``reserve`` /
``unreserve``) and keeping the allocation and fragmentation figures current (used by the
what-if replay, :mod:`~scheduling.placement.whatif.run`, and the benchmark,
:mod:`~scheduling.placement.lab.bench`)."""

from __future__ import annotations

from scheduling.placement import PlacementRequest, place, reserve, unreserve
from scheduling.placement.fragmentation import FragCalculator, TargetWorkload, device_free_milli
from scheduling.placement.plugins.frag_plugins import TracePolicyPlugin
from scheduling.placement.profile import Framework, Profile
from scheduling.placement.registry import Registry
from scheduling.placement.topology import RULES
from scheduling.placement.types import (
    ClusterSnapshot,
    Decision,
    NodeInfo,
    PodAssignment,
    PodRequest,
)
from scheduling.placement.whatif.policies import register_trace_policies, tag_of
from scheduling.placement.whatif.trace import GPU_MILLI

__all__ = ["Replay", "profile_for"]


def profile_for(
    name: str, workload: TargetWorkload, tie_seed: int, seed: int
) -> tuple[Framework, TracePolicyPlugin]:
    """(Framework, plugin) for policy ``name``: the core's default filters + the policy scorer.

    Raises:
        TypeError: the registry built something else than a trace policy plugin for ``name``.
    """
    reg = Registry()
    register_trace_policies(reg)
    prof = Profile(
        name=f"trace-{name}",
        scores=((name, 1.0),),
        registry=reg,
        select="max",
        plugin_args={name: {"workload": workload, "tie_seed": tie_seed, "seed": seed}},
    )
    fw = prof.build()
    plugin = fw.scores[0][0]
    if not isinstance(plugin, TracePolicyPlugin):
        raise TypeError(f"policy {name!r}: {type(plugin).__name__} is no TracePolicyPlugin")
    return fw, plugin


class Replay:
    """One policy on one snapshot: place through the core, book, keep the metrics."""

    def __init__(
        self,
        name: str,
        snapshot: ClusterSnapshot,
        workload: TargetWorkload,
        measure: TargetWorkload,
        seed: int,
    ) -> None:
        self.snapshot = snapshot
        self.fw, self.plugin = profile_for(name, workload, seed, seed)
        self.calc = FragCalculator(measure)
        #: per node: its device models and the single model (None when mixed); static here.
        self.models: dict[str, tuple[tuple[str, ...], str | None]] = {}
        #: per node: free milli per device (``device_free_milli``), and device uuid -> position.
        self.free: dict[str, list[int]] = {}
        self.slot: dict[str, dict[str, int]] = {}
        self.node_frag: dict[str, float] = {}
        self.frag_total = 0.0
        self.idle = 0
        self.cap = 0
        for n, node in snapshot.nodes.items():
            types = tuple(d.type for d in node.devices)
            one = types[0] if types and all(t == types[0] for t in types) else None
            self.models[n] = (types, one)
            self.free[n] = [device_free_milli(d) for d in node.devices]
            self.slot[n] = {d.uuid: j for j, d in enumerate(node.devices)}
            f = self._frag(node)
            self.node_frag[n] = f
            self.frag_total += f
            self.cap += GPU_MILLI * len(node.devices)
        self.idle = self.cap
        self.allocated = 0

    def _frag(self, node: NodeInfo) -> float:
        """F_n(M) of ``node`` under the measure (``FragCalculator.node`` of
        ``node_gpu_view``, with the node's models read once and ``self.free`` kept current)."""
        if not node.schedulable or node.error:
            return 0.0  # seen with no free GPU
        gpus = self.free[node.name]
        if not sum(gpus):
            return 0.0
        cpu = node.cpu_milli - node.used_cpu_milli
        types, model = self.models[node.name]
        if model is not None:
            return self.calc.uniform(model, cpu, tuple(sorted(gpus)))
        return self.calc.node(cpu, gpus, types)

    def _touch(self, name: str, pod: PodRequest, sign: int, pa: PodAssignment) -> None:
        """Tell the plugin about a booking change on ``name`` (``pa`` booked or released) and
        update the node's free device milli and fragment."""
        node = self.snapshot.nodes[name]
        free = self.free[name]
        slot = self.slot[name]
        for c in pa.containers:
            for g in c.devices:  # only the devices of the pod changed
                j = slot[g.uuid]
                free[j] = device_free_milli(node.devices[j])
        tag = tag_of(pod) if self.plugin.uses_tags else ""  # only GpuClustering reads tags
        if tag:  # usage changes reach the plugin through the snapshot's change journal
            self.plugin.sync(self.snapshot, [(name, tag, sign)])
        f = self._frag(node)
        self.frag_total += f - self.node_frag[name]
        self.node_frag[name] = f

    def place(self, pod_req: PodRequest, gpu_milli: int) -> Decision:
        """Place and book one pod; the Decision (booked when schedulable)."""
        dec = place(self.snapshot, PlacementRequest(pod_req.name, (pod_req,)), self.fw)
        if dec.schedulable:
            self.book(pod_req, dec, gpu_milli)
        return dec

    def book(self, pod_req: PodRequest, dec: Decision, gpu_milli: int) -> None:
        """Book a schedulable one-pod Decision and count its GPU share."""
        reserve(self.snapshot, dec)
        self.allocated += gpu_milli
        self.idle -= gpu_milli
        self._touch(dec.pods[0].node, pod_req, +1, dec.pods[0])

    def release(self, pod_req: PodRequest, dec: Decision, gpu_milli: int) -> None:
        """Unbook a pod placed by :meth:`place` (its Decision ``dec``)."""
        unreserve(self.snapshot, dec)
        self.allocated -= gpu_milli
        self.idle += gpu_milli
        self._touch(dec.pods[0].node, pod_req, -1, dec.pods[0])

    def place_gang(
        self, request: PlacementRequest, gpu_milli: int, topology_rule: str = RULES[0]
    ) -> Decision:
        """Place and book a request of several pods (a gang, with or without ``topology``);
        the Decision (booked when schedulable). ``gpu_milli``: the whole request's."""
        dec = place(self.snapshot, request, self.fw, topology_rule=topology_rule)
        if dec.schedulable:
            self.book_gang(request, dec, gpu_milli)
        return dec

    def book_gang(self, request: PlacementRequest, dec: Decision, gpu_milli: int) -> None:
        """Book a schedulable Decision of ``request`` and count its GPU share."""
        reserve(self.snapshot, dec)
        self.allocated += gpu_milli
        self.idle -= gpu_milli
        pods = {p.name: p for p in request.pods}
        for pa in dec.pods:
            self._touch(pa.node, pods[pa.pod], +1, pa)

    def release_gang(self, request: PlacementRequest, dec: Decision, gpu_milli: int) -> None:
        """Unbook what :meth:`place_gang` booked."""
        unreserve(self.snapshot, dec)
        self.allocated -= gpu_milli
        self.idle += gpu_milli
        pods = {p.name: p for p in request.pods}
        for pa in dec.pods:
            self._touch(pa.node, pods[pa.pod], -1, pa)

    @property
    def frag_rate(self) -> float:
        """Fragmented share of the idle GPU milli, % (0 when nothing is idle)."""
        return 100 * self.frag_total / self.idle if self.idle else 0.0
