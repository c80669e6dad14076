"""Per-exporter metric tables: exporter sample → canonical observation (pure; no Django).

Every exporter spells the same quantities differently; this module maps the main series of each
onto one vocabulary with units in the name. Sources of the names:

* HAMi scheduler, ``cmd/scheduler/metrics.go`` (port 9395) and its legacy names
  (``--legacy-metrics``), shared/docs/hami.md §6;
* HAMi vGPU monitor, ``cmd/vGPUmonitor/metrics.go`` (port 9394) and its legacy names, ibid.;
* NVIDIA dcgm-exporter default counters (``etc/default-counters.csv``: ``DCGM_FI_DEV_*``;
  labels ``gpu``, ``UUID``, ``device``, ``modelName``, ``Hostname``, ``pod``, ``namespace``,
  ``container``; MIG series add ``GPU_I_ID`` / ``GPU_I_PROFILE``);
* Huawei Ascend npu-exporter (``npu_chip_info_*``; labels ``id``, ``model_name``, ``vdie_id``,
  ``pcie_bus_info``, ``namespace``, ``pod_name``, ``container_name``; no node label);
* Cambricon mlu-exporter with the default ``--metrics-prefix=mlu`` (cndev collector:
  ``mlu_utilization``, ``mlu_memory_used`` / ``mlu_memory_total`` in bytes, ``mlu_health``;
  labels ``sn``, ``uuid``, ``mlu``, ``model``, ``node``, ``vf``);
* Hygon dcu-exporter (``dcu_utilizationrate``, ``dcu_usedmemory_bytes``, ``dcu_memorycap_bytes``,
  ``dcu_temp``, ``dcu_power_usage``; labels ``device_id`` (serial), ``minor_number``, ``node``).

Exporters' pod labels are kept only as a *claim* (``pod_claim``): attribution uses the console's
own placements (see :mod:`telemetry.attribution`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from telemetry.exposition import RawSample

__all__ = [
    "EXPORTER_KINDS",
    "DEVICE_METRICS",
    "POD_METRICS",
    "MetricSpec",
    "Observation",
    "NormaliseResult",
    "normalise",
]

MIB = 1048576.0

# Canonical metrics, device scope (a whole physical device).
UTIL = "util_percent"
MEM_USED = "memory_used_mib"
MEM_TOTAL = "memory_total_mib"
TEMP = "temperature_c"
POWER = "power_w"
HEALTH = "health"  # 1 healthy, 0 unhealthy
XID = "xid_last"  # last XID code seen, 0 = none (DCGM)
XID_COUNT = "xid_count"  # XID errors counted by the exporter
ECC_DBE = "ecc_dbe_total"  # double-bit (uncorrectable) ECC errors, counter
ERROR_CODE = "error_code"  # vendor error code, 0 = none (Ascend)
ALLOC_MEM = "alloc_memory_mib"  # booked by HAMi's scheduler
ALLOC_CORES = "alloc_cores_percent"
# Pod (container) scope: one workload's share of a device.
POD_MEM_USED = "pod_memory_used_mib"
POD_UTIL = "pod_util_percent"
POD_ALLOC_MEM = "pod_alloc_memory_mib"
POD_ALLOC_CORES = "pod_alloc_cores_percent"

DEVICE_METRICS = (
    UTIL,
    MEM_USED,
    MEM_TOTAL,
    TEMP,
    POWER,
    HEALTH,
    XID,
    XID_COUNT,
    ECC_DBE,
    ERROR_CODE,
    ALLOC_MEM,
    ALLOC_CORES,
)
POD_METRICS = (POD_MEM_USED, POD_UTIL, POD_ALLOC_MEM, POD_ALLOC_CORES)

DEVICE, POD = "device", "pod"


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """How one exporter series maps to a canonical metric.

    Attributes:
        metric: canonical name.
        scale: multiplier to the canonical unit (bytes → MiB is 1/1048576, ratio → % is 100).
        scope: ``"device"`` or ``"pod"``.
        mig_only: use the series only when it carries a MIG instance label.
    """

    metric: str
    scale: float = 1.0
    scope: str = DEVICE
    mig_only: bool = False


_B = 1.0 / MIB
_HAMI_SCHEDULER = {
    "hami_gpu_memory_allocated_bytes": MetricSpec(ALLOC_MEM, _B),
    "hami_gpu_core_allocated_ratio": MetricSpec(ALLOC_CORES),
    "hami_vgpu_memory_allocated_bytes": MetricSpec(POD_ALLOC_MEM, _B, POD),
    "hami_vgpu_core_allocated_ratio": MetricSpec(POD_ALLOC_CORES, 1.0, POD),
    # legacy names
    "GPUDeviceMemoryAllocated": MetricSpec(ALLOC_MEM, _B),
    "GPUDeviceCoreAllocated": MetricSpec(ALLOC_CORES),
    "vGPUMemoryAllocated": MetricSpec(POD_ALLOC_MEM, _B, POD),
    "vGPUCoreAllocated": MetricSpec(POD_ALLOC_CORES, 1.0, POD),
}
_HAMI_MONITOR = {
    "hami_host_gpu_memory_used_bytes": MetricSpec(MEM_USED, _B),
    "hami_host_gpu_utilization_ratio": MetricSpec(UTIL),  # 0-100 despite the name
    "hami_vgpu_memory_used_bytes": MetricSpec(POD_MEM_USED, _B, POD),
    "hami_container_device_utilization_ratio": MetricSpec(POD_UTIL, 1.0, POD),
    # legacy names
    "HostGPUMemoryUsage": MetricSpec(MEM_USED, _B),
    "HostCoreUtilization": MetricSpec(UTIL),
    "vGPU_device_memory_usage_in_bytes": MetricSpec(POD_MEM_USED, _B, POD),
    "Device_utilization_desc_of_container": MetricSpec(POD_UTIL, 1.0, POD),
}
_DCGM = {
    "DCGM_FI_DEV_GPU_UTIL": MetricSpec(UTIL),
    "DCGM_FI_DEV_FB_USED": MetricSpec(MEM_USED),  # MiB
    "DCGM_FI_DEV_GPU_TEMP": MetricSpec(TEMP),
    "DCGM_FI_DEV_POWER_USAGE": MetricSpec(POWER),
    "DCGM_FI_DEV_XID_ERRORS": MetricSpec(XID),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": MetricSpec(ECC_DBE),
    # MIG instances report no DCGM_FI_DEV_GPU_UTIL; graphics-engine activity (0..1) instead.
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": MetricSpec(UTIL, 100.0, DEVICE, mig_only=True),
}
_ASCEND = {
    "npu_chip_info_utilization": MetricSpec(UTIL),
    "npu_chip_info_hbm_used_memory": MetricSpec(MEM_USED),  # MB as npu-smi reports (MiB)
    "npu_chip_info_hbm_total_memory": MetricSpec(MEM_TOTAL),
    "npu_chip_info_temperature": MetricSpec(TEMP),
    "npu_chip_info_power": MetricSpec(POWER),
    "npu_chip_info_health_status": MetricSpec(HEALTH),
    "npu_chip_info_error_code": MetricSpec(ERROR_CODE),
}
_CAMBRICON = {
    "mlu_utilization": MetricSpec(UTIL),
    "mlu_memory_used": MetricSpec(MEM_USED, _B),
    "mlu_memory_total": MetricSpec(MEM_TOTAL, _B),
    "mlu_temperature": MetricSpec(TEMP),
    "mlu_power_usage": MetricSpec(POWER),
    "mlu_health": MetricSpec(HEALTH),
    "mlu_xid_error_count": MetricSpec(XID_COUNT),
}
_HYGON = {
    "dcu_utilizationrate": MetricSpec(UTIL),
    "dcu_usedmemory_bytes": MetricSpec(MEM_USED, _B),
    "dcu_memorycap_bytes": MetricSpec(MEM_TOTAL, _B),
    "dcu_temp": MetricSpec(TEMP),
    "dcu_power_usage": MetricSpec(POWER),
}

TABLES: dict[str, dict[str, MetricSpec]] = {
    "hami-scheduler": _HAMI_SCHEDULER,
    "hami-monitor": _HAMI_MONITOR,
    "dcgm": _DCGM,
    "ascend": _ASCEND,
    "cambricon": _CAMBRICON,
    "hygon": _HYGON,
}
EXPORTER_KINDS = tuple(TABLES)

# Label names, first match wins. Device identity: serial / UUID only (never an index alone).
DEVICE_LABELS = {
    "hami-scheduler": ("device_uuid", "deviceuuid"),
    "hami-monitor": ("device_uuid", "deviceuuid"),
    "dcgm": ("UUID", "uuid"),
    "ascend": ("vdie_id",),
    "cambricon": ("uuid", "sn"),  # both are tried against the inventory
    "hygon": ("device_id", "serial_number"),
}
INDEX_LABELS = ("device_index", "deviceidx", "gpu", "id", "minor_number", "mlu")
NODE_LABELS = ("node", "Hostname", "nodeid", "nodename", "hostname")
POD_LABELS = ("pod", "pod_name", "podname")
NAMESPACE_LABELS = ("namespace", "podnamespace", "pod_namespace")
#: The GPU instance id (DCGM ``GPU_I_ID``, HAMi's ``gpu_instance_id``) is what attribution
#: joins on; a MIG device UUID alone cannot be joined (its series stay unattributed).
MIG_LABELS = ("GPU_I_ID", "gpu_instance_id", "mig_uuid")


@dataclass(frozen=True, slots=True)
class Observation:
    """One exporter sample in canonical form.

    Attributes:
        metric: canonical metric name (see module constants).
        scope: ``"device"`` or ``"pod"``.
        value: value in the canonical unit.
        device_keys: candidate device ids (UUID / serial) from the labels, first preferred.
        node: node label ("" when absent).
        index: device index label ("" when absent; used only together with ``node``).
        pod_claim: ``"namespace/pod"`` the exporter claims ("" when absent).
        mig: MIG instance id ("" when not a MIG series).
        source: the exporter's sample name.
    """

    metric: str
    scope: str
    value: float
    device_keys: tuple[str, ...]
    node: str = ""
    index: str = ""
    pod_claim: str = ""
    mig: str = ""
    source: str = ""


@dataclass
class NormaliseResult:
    """Observations of one payload plus what was left out.

    Attributes:
        observations: canonical observations.
        ignored: samples of series this console does not use (info series, VF series, ...).
    """

    observations: list[Observation] = field(default_factory=list)
    ignored: int = 0


def _first(labels: dict[str, str], names: Iterable[str]) -> str:
    for name in names:
        value = labels.get(name, "")
        if value:
            return value
    return ""


def normalise(kind: str, samples: Iterable[RawSample]) -> NormaliseResult:
    """Map an exporter's samples to canonical observations.

    Args:
        kind: one of :data:`EXPORTER_KINDS`.
        samples: parsed samples of one payload.

    Returns:
        The observations; samples of unmapped series are counted in ``ignored``.

    Raises:
        ValueError: unknown ``kind``.
    """
    try:
        table = TABLES[kind]
    except KeyError:
        raise ValueError(
            f"unknown exporter kind {kind!r}; expected one of {EXPORTER_KINDS}"
        ) from None
    device_labels = DEVICE_LABELS[kind]
    out = NormaliseResult()
    for sample in samples:
        spec = table.get(sample.name)
        if spec is None and sample.name.endswith("_total"):
            # prometheus_client's parser appends "_total" to samples of a counter family
            # whose name lacks it (e.g. DCGM_FI_DEV_ECC_DBE_VOL_TOTAL).
            spec = table.get(sample.name[: -len("_total")])
        labels = sample.labels
        mig = _first(labels, MIG_LABELS)
        if spec is None or (spec.mig_only and not mig) or labels.get("vf"):
            out.ignored += 1
            continue
        keys = tuple(dict.fromkeys(v for v in (labels.get(n, "") for n in device_labels) if v))
        pod = _first(labels, POD_LABELS)
        namespace = _first(labels, NAMESPACE_LABELS)
        out.observations.append(
            Observation(
                metric=spec.metric,
                scope=spec.scope,
                value=sample.value * spec.scale,
                device_keys=keys,
                node=_first(labels, NODE_LABELS),
                index=_first(labels, INDEX_LABELS),
                pod_claim=f"{namespace}/{pod}" if pod else "",
                mig=mig,
                source=sample.name,
            )
        )
    return out
