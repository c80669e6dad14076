"""The vendor descriptors: every rule the console applies to one vendor word outside the
placement plugins (``scheduling/placement/vendors/``), as a named trait of that vendor.

Code outside this catalogue and the vendor plugins never compares vendor words
(``vendor == "DCU"``, ``vendor in ("Ascend", "Iluvatar")``, ``TABLE["NVIDIA"]``): it asks
:func:`vendor_traits` for the trait the rule is about (``tests/ci/test_vendor_rules.py``
checks this). A vendor word this table does not name gets :class:`VendorTraits` 's defaults,
the generic HAMi-core backend (as :func:`scheduling.placement.vendors.build_vendors` gives
it the generic plugin), so a new backend can still be added from data alone.

Sources: HAMi v2.10 ``pkg/device/<vendor>/`` (shared/docs/hami.md §2-§3) and the vendors'
device plugins and exporters, as each trait's docstring says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

__all__ = [
    "VendorTraits",
    "VENDOR_TRAITS",
    "VENDOR_WORDS",
    "vendor_traits",
    "serial_vendor_of_exporter",
    "ascend_family",
    "HamiResources",
    "HAMI_RESOURCES",
    "CAPACITY_UNITS",
    "CAPACITY_CAMBRICON",
    "CAPACITY_MTHREADS",
    "CAPACITY_NEURON",
]

CAPACITY_UNITS = "units"
"""Capacity registration: one device per capacity unit (Metax, Enflame, Kunlun)."""
CAPACITY_CAMBRICON = "cambricon"
"""Cambricon sMLU: 100 capacity units per card, model from the ``Model`` node label."""
CAPACITY_MTHREADS = "mthreads"
"""Mthreads: ``cores_percent`` capacity units per card."""
CAPACITY_NEURON = "neuron"
"""AWS Neuron: devices with their NeuronCores (``aws.amazon.com/neuroncore``)."""


@dataclass(frozen=True, slots=True)
class VendorTraits:
    """What one vendor word does differently from the generic HAMi-core backend.

    Attributes:
        word: the vendor word (``DeviceModel.vendor``, ``DeviceRequest.vendor``).
        per_chip: HAMi registers one backend per chip (Ascend ``vnpus``, Iluvatar
            ``iluvatars``): resource and annotation names carry the chip's common word, a
            grant's ``type`` is that word, and a request names one chip.
        mig: grants may be MIG instances (NVIDIA; ``nvidia.com/vgpu-mode: mig``,
            ``hami.io/vgpu-mig-allocations``).
        vnpu_templates: Ascend vNPU: templates fix the cores (a cores request is accepted
            only in ``huawei.com/vnpu-mode: hami-core`` soft split), whole NPUs are asked by
            count alone, and HAMi writes the ``huawei.com/<CommonWord>`` runtime JSON
            (``pkg/device/ascend/device.go``).
        drs_profiles: Enflame DRS: a card's profiles are DRS slice sizes (node annotation
            ``enflame.com/gcu-drs-capacity``), one card per container, asked by slice count.
        neuron_cores: AWS Neuron: a grant is a NeuronCore bit mask (``AWS_NEURON_IDS``); one
            device is asked by its cores, several by device count.
        unit_sharing: shared in fixed units rather than fractionally (Hygon vDCU; the
            sharing mode the pages show, :func:`scheduling.choices.sharing_mode`).
        serial_identity: cards are keyed by serial: a legacy index-based registration
            (``DCU-<index>``) is matched to the serial seen at (node, index)
            (:mod:`scheduling.kube.identity`, ``DeviceSerial``).
        serial_exporter: exporter kind (``telemetry.exporters``) whose device label is this
            vendor's card serial ("" = none; Hygon dcu-exporter ``device_id``).
        count_from_limits_only: the backend reads the count resource from limits only, never
            from requests (Metax sGPU, AMD).
        memory_quantity: the memory resource takes Kubernetes quantities (``4Gi``) and the
            console writes it in ``Mi`` (Metax sGPU ``metax-tech.com/vmemory``; a bare number
            is GiB).
        qos_annotation: pod annotation of the sharing QoS policy ("" = none; Metax sGPU).
        own_registration_entries: the registration may hold the device plugin's own entries
            (no ``id``; HAMi ``convertMetaxSDeviceToHAMIDevice``, metax/protocol.go).
        whole_cards_when_multi: a request of more than one device books whole cards (Mthreads,
            ``mthreads/device.go``: 96 memory units and every core).
        capacity_layout: how a capacity-registered backend's ``status.capacity`` becomes
            devices: :data:`CAPACITY_UNITS`, :data:`CAPACITY_CAMBRICON`,
            :data:`CAPACITY_MTHREADS` or :data:`CAPACITY_NEURON`.
        capacity_id_word: word in the ids of capacity-registered devices (HAMi's
            ``GetNodeDevices``); "" = the vendor word in lower case.
        numa_halves: capacity devices: the second half of the cards sit on NUMA node 1 and
            every card has 100 % cores (Kunlun).
        hami_reads_type_annotations: HAMi's scheduler reads the backend's ``use-*type`` /
            ``nouse-*type`` pod annotations (Cambricon: defined but never read,
            cambricon/device.go:243-248).
        nvml_uuids: device ids are NVML UUIDs, ``GPU-<uuid>`` (NVIDIA); the demo's made-up
            ids follow (:meth:`made_up_device_id`).
        cores_clamped: cores are a percent of one device and HAMi's Fit clamps a request
            above 100 to 100 (logging "core limit can't exceed 100"); the console refuses it
            (:func:`scheduling.devices.resources.cores_limit_error`). False where HAMi does
            not clamp: Metax sGPU (above 100 fails ``CardInsufficientCore``), Enflame DRS
            (refused as above 100), AWS Neuron (NeuronCores, a count), Vastai and Biren
            (count-only, cores booked as asked).
    """

    word: str
    per_chip: bool = False
    mig: bool = False
    vnpu_templates: bool = False
    drs_profiles: bool = False
    neuron_cores: bool = False
    unit_sharing: bool = False
    serial_identity: bool = False
    serial_exporter: str = ""
    count_from_limits_only: bool = False
    memory_quantity: bool = False
    qos_annotation: str = ""
    own_registration_entries: bool = False
    whole_cards_when_multi: bool = False
    capacity_layout: str = CAPACITY_UNITS
    capacity_id_word: str = ""
    numa_halves: bool = False
    hami_reads_type_annotations: bool = True
    nvml_uuids: bool = False
    cores_clamped: bool = True

    @property
    def id_word(self) -> str:
        """Word in the ids of capacity-registered devices (``{node}-{word}-{i}``)."""
        return self.capacity_id_word or self.word.lower()

    def made_up_device_id(self, raw: UUID) -> str:
        """A device id of this vendor's shape made from ``raw`` (the demo's devices):
        ``GPU-<uuid>`` with :attr:`nvml_uuids`, else ``<WORD>-<16 upper-case hex digits>``."""
        if self.nvml_uuids:
            return f"GPU-{raw}"
        return f"{self.word.upper()}-{raw.hex[:16].upper()}"


_TRAITS = (
    VendorTraits("NVIDIA", mig=True, nvml_uuids=True),
    VendorTraits("MLU", capacity_layout=CAPACITY_CAMBRICON, hami_reads_type_annotations=False),
    VendorTraits("DCU", unit_sharing=True, serial_identity=True, serial_exporter="hygon"),
    VendorTraits("Ascend", per_chip=True, vnpu_templates=True),
    VendorTraits("Metax", capacity_id_word="metax"),
    VendorTraits(
        "MetaxSGPU",
        count_from_limits_only=True,
        memory_quantity=True,
        qos_annotation="metax-tech.com/sgpu-qos-policy",
        own_registration_entries=True,
        cores_clamped=False,
    ),
    VendorTraits("Iluvatar", per_chip=True),
    VendorTraits("Enflame", capacity_id_word="GCU"),
    VendorTraits("Mthreads", whole_cards_when_multi=True, capacity_layout=CAPACITY_MTHREADS),
    VendorTraits("Kunlun", numa_halves=True),
    VendorTraits("KunlunVXPU"),
    VendorTraits("AMD", count_from_limits_only=True),
    VendorTraits(
        "AWSNeuron", neuron_cores=True, capacity_layout=CAPACITY_NEURON, cores_clamped=False
    ),
    VendorTraits("Vastai", cores_clamped=False),
    VendorTraits("Biren", cores_clamped=False),
    VendorTraits("EnflameDRS", drs_profiles=True, cores_clamped=False),
)

VENDOR_TRAITS: dict[str, VendorTraits] = {t.word: t for t in _TRAITS}
"""Vendor word -> its traits, for every vendor word HAMi v2.10 has (``hami.md``)."""

VENDOR_WORDS: tuple[str, ...] = tuple(VENDOR_TRAITS)
"""HAMi's vendor words, as device requests and device models spell them (the API's and the
pages' vendor choices, in this order)."""


def vendor_traits(vendor: str) -> VendorTraits:
    """The traits of ``vendor`` (exact vendor word); a word not in :data:`VENDOR_TRAITS`
    gets the generic backend's defaults."""
    traits = VENDOR_TRAITS.get(vendor)
    return traits if traits is not None else VendorTraits(vendor)


def serial_vendor_of_exporter(kind: str) -> str:
    """The vendor whose card serials the exporter of ``kind`` reports ("" = none)."""
    return next((t.word for t in _TRAITS if kind and t.serial_exporter == kind), "")


_ASCEND_FAMILIES = ("Ascend910", "Ascend310P", "Ascend310")


def ascend_family(chip: str) -> str:
    """Chip family of an Ascend common word (``Ascend910B3`` -> ``Ascend910``), as MindX's
    device plugin names its whole-NPU resource (``huawei.com/Ascend910``); other words
    unchanged."""
    return next((f for f in _ASCEND_FAMILIES if chip.startswith(f)), chip)


@dataclass(frozen=True, slots=True)
class HamiResources:
    """HAMi resource names of one vendor (shared/docs/hami.md §2) and its device pin annotation.

    Attributes:
        count: device count resource (``{chip}`` is replaced by the grant's common word).
        memory: per-device memory resource ("" = vendor has none).
        cores: per-device cores resource ("" = none).
        memory_unit_mib: MiB per memory unit (Cambricon/Iluvatar 256, Mthreads 512); memory
            is rounded UP to whole units.
        memory_suffix: appended to the value (Metax sGPU: ``"Mi"``, a bare number is GiB).
        cores_per_device: unit of the cores resource for one whole device (Mthreads 16).
        use_uuid: pod annotation listing the granted device uuids (hami.md §3.1).
    """

    count: str
    memory: str = ""
    cores: str = ""
    memory_unit_mib: int = 1
    memory_suffix: str = ""
    cores_per_device: int = 100
    use_uuid: str = ""


HAMI_RESOURCES: Mapping[str, HamiResources] = {
    "NVIDIA": HamiResources(
        "nvidia.com/gpu",
        "nvidia.com/gpumem",
        "nvidia.com/gpucores",
        use_uuid="nvidia.com/use-gpuuuid",
    ),
    "MLU": HamiResources(
        "cambricon.com/vmlu",
        "cambricon.com/mlu.smlu.vmemory",
        "cambricon.com/mlu.smlu.vcore",
        memory_unit_mib=256,
        use_uuid="cambricon.com/use-gpuuuid",
    ),
    "DCU": HamiResources(
        "hygon.com/dcunum",
        "hygon.com/dcumem",
        "hygon.com/dcucores",
        use_uuid="hygon.com/use-gpuuuid",
    ),
    "Ascend": HamiResources(
        "huawei.com/{chip}",
        "huawei.com/{chip}-memory",
        "huawei.com/{chip}-core",
        use_uuid="hami.io/use-{chip}-uuid",
    ),
    "Metax": HamiResources("metax-tech.com/gpu", use_uuid="metax-tech.com/use-gpuuuid"),
    "MetaxSGPU": HamiResources(
        "metax-tech.com/sgpu",
        "metax-tech.com/vmemory",
        "metax-tech.com/vcore",
        memory_suffix="Mi",
        use_uuid="metax-tech.com/use-gpuuuid",
    ),
    "Iluvatar": HamiResources(
        "iluvatar.ai/{chip}-vgpu",
        "iluvatar.ai/{chip}.vMem",
        "iluvatar.ai/{chip}.vCore",
        memory_unit_mib=256,
        use_uuid="hami.io/use-{chip}-uuid",
    ),
    "Enflame": HamiResources("enflame.com/gcu", use_uuid="enflame.com/use-gpuuuid"),
    "Mthreads": HamiResources(
        "mthreads.com/vgpu",
        "mthreads.com/sgpu-memory",
        "mthreads.com/sgpu-core",
        memory_unit_mib=512,
        cores_per_device=16,
        use_uuid="mthreads.ai/use-gpuuuid",
    ),
    "Kunlun": HamiResources("kunlunxin.com/xpu", use_uuid="baidu.com/use-gpuuuid"),
    "KunlunVXPU": HamiResources(
        "kunlunxin.com/vxpu", "kunlunxin.com/vxpu-memory", use_uuid="hami.io/use-xpu-uuid"
    ),
    "AMD": HamiResources(
        "amd.com/gpu", "amd.com/gpumem", "amd.com/gpucores", use_uuid="amd.com/use-gpu-uuid"
    ),
    "AWSNeuron": HamiResources(
        "aws.amazon.com/neuron",
        cores="aws.amazon.com/neuroncore",
        use_uuid="aws.amazon.com/use-neuron-uuid",
    ),
    "Vastai": HamiResources("vastaitech.com/va", use_uuid="vastaitech.com/use-gpuuuid"),
    "Biren": HamiResources("birentech.com/gpu", use_uuid="birentech.com/use-gpuuuid"),
    "EnflameDRS": HamiResources("enflame.com/drs-gcu", use_uuid="enflame.com/use-gpuuuid"),
}
"""Vendor word (``DeviceGrant.vendor``) -> HAMi resource names: the manifest builders'
fallback (:mod:`scheduling.kube.device_resources`) for a grant whose model the catalogue does
not know."""
