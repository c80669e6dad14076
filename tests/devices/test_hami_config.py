"""HAMi's two config files (chart values.yaml, scheduler device-config.yaml / its ConfigMap),
detected by shape, unknown keys an error naming the key path."""

import pytest
import yaml

from scheduling.devices import HamiConfigError, read_hami_config

DEVICE_CONFIG = """
nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceMemoryPercentageName: nvidia.com/gpumem-percentage
  resourceCoreName: nvidia.com/gpucores
  resourcePriorityName: nvidia.com/priority
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  preConfiguredDeviceMemory: 0
  memoryFactor: 1
  deviceSplitCount: 7
  deviceMemoryScaling: 1
  deviceCoreScaling: 1
  enableNumaTopology: false
  gpuCorePolicy: default
  libCudaLogLevel: 1
  runtimeClassName: ""
  migProfileAllowlist:
  - models: ["A30"]
    profiles: ["1g.6gb", "2g.12gb", "4g.24gb"]
cambricon:
  resourceCountName: cambricon.com/vmlu
  resourceMemoryName: cambricon.com/mlu.smlu.vmemory
  resourceCoreName: cambricon.com/mlu.smlu.vcore
hygon:
  resourceCountName: hygon.com/dcunum
  resourceMemoryName: hygon.com/dcumem
  resourceCoreName: hygon.com/dcucores
  memoryFactor: 1
metax:
  resourceCountName: "metax-tech.com/gpu"
  resourceVCountName: metax-tech.com/sgpu
  resourceVMemoryName: metax-tech.com/vmemory
  resourceVCoreName: metax-tech.com/vcore
  sgpuTopologyAware: false
enflame:
  resourceNameGCU: "enflame.com/gcu"
  resourceNameDRSGCU: enflame.com/drs-gcu
  resourceNameGCUMemory: enflame.com/gcu-memory
  resourceNameGCUCore: enflame.com/gcu-core
mthreads:
  resourceCountName: "mthreads.com/vgpu"
  resourceMemoryName: "mthreads.com/sgpu-memory"
  resourceCoreName: "mthreads.com/sgpu-core"
iluvatars:
- chipName: BI-V150
  commonWord: BI-V150
  resourceCountName: iluvatar.ai/BI-V150-vgpu
  resourceMemoryName: iluvatar.ai/BI-V150.vMem
  resourceCoreName: iluvatar.ai/BI-V150.vCore
kunlun:
  resourceCountName: kunlunxin.com/xpu
  resourceVCountName: kunlunxin.com/vxpu
  resourceVMemoryName: kunlunxin.com/vxpu-memory
awsneuron:
  resourceCountName: "aws.amazon.com/neuron"
  resourceCoreName: "aws.amazon.com/neuroncore"
amd:
  resourceCountName: "amd.com/gpu"
  resourceCoreName: "amd.com/gpucores"
  resourceMemoryName: "amd.com/gpumem"
vastai:
  resourceCountName: vastaitech.com/va
biren:
  resourceCountName: birentech.com/gpu
vnpus:
  hamiVnpuCore: true
  configs:
  - chipName: 910B3
    commonWord: Ascend910B3
    resourceName: huawei.com/Ascend910B3
    resourceMemoryName: huawei.com/Ascend910B3-memory
    resourceCoreName: huawei.com/Ascend910B3-core
    memoryAllocatable: 65536
    memoryCapacity: 65536
    memoryFactor: 1
    aiCore: 20
    aiCPU: 7
    runtimeClassName: ""
    overwriteEnv: false
    templates:
      - name: vir05_1c_16g
        memory: 16384
        aiCore: 5
        aiCPU: 1
      - name: vir10_3c_32g
        memory: 32768
        aiCore: 10
        aiCPU: 3
  - chipName: Ascend910
    commonWord: Ascend910C
    memoryAllocatable: 65536
    memoryCapacity: 65536
    aiCore: 20
    aiCPU: 7
    superPod: true
    templates:
      - name: vir05_1c_16g
        memory: 16384
"""

VALUES = """
global:
  imageRegistry: ""
  imageTag: v2.10.0
nameOverride: ""
resourceName: "nvidia.com/gpu"
resourceMem: "example.com/vram"
resourceMemPercentage: "nvidia.com/gpumem-percentage"
resourceCores: "nvidia.com/gpucores"
resourcePriority: "nvidia.com/priority"
mluResourceName: "cambricon.com/vmlu"
mluResourceMem: "cambricon.com/mlu370.smlu.vmemory"
mluResourceCores: "cambricon.com/mlu370.smlu.vcore"
dcuResourceName: "hygon.com/dcunum"
kunlunResourceVCountName: "kunlunxin.com/vxpu"
schedulerName: "hami-scheduler"
scheduler:
  overwriteEnv: "false"
  defaultSchedulerPolicy:
    nodeSchedulerPolicy: spread
    gpuSchedulerPolicy: topology-aware
  kubeScheduler:
    enabled: true
  leaderElect: true
  nodeLockExpire: "5m"
devicePlugin:
  deviceSplitCount: 5
  deviceMemoryScaling: 1.5
  deviceCoreScaling: 1
  migStrategy: "none"
  nvidiaNodeSelector:
    gpu: "on"
devices:
  nvidia:
    gpuCorePolicy: default
    libCudaLogLevel: 1
  ascend:
    enabled: false
    hamiVnpuCore: false
  iluvatar:
    enabled: true
  kunlun:
    enabled: true
    customresources: []
device-config:
  content: ""
"""


def cfg_of(hc, vendor, chip=""):
    return next(c for c in hc.devices if (c.vendor, c.chip) == (vendor, chip))


def test_device_config_shape():
    hc = read_hami_config(yaml.safe_load(DEVICE_CONFIG))
    assert hc.shape == "device-config"
    assert cfg_of(hc, "NVIDIA").split_count == 7
    assert hc.mig_allowlist == ((("A30",), ("1g.6gb", "2g.12gb", "4g.24gb")),)
    assert hc.hami_vnpu_core is True
    ascend = [c.chip for c in hc.devices if c.vendor == "Ascend"]
    assert ascend == ["Ascend910B3", "Ascend910C"]  # vnpus replace the defaults
    b3 = cfg_of(hc, "Ascend", "Ascend910B3")
    assert [(t.name, t.memory_mib, t.cores_percent, t.cpus) for t in b3.templates] == [
        ("vir05_1c_16g", 16384, 5, 1),
        ("vir10_3c_32g", 32768, 10, 3),
    ]
    assert cfg_of(hc, "Ascend", "Ascend910C").super_pod is True
    assert [c.chip for c in hc.devices if c.vendor == "Iluvatar"] == ["BI-V150"]
    assert cfg_of(hc, "MetaxSGPU").resource_count == "metax-tech.com/sgpu"
    assert cfg_of(hc, "EnflameDRS").resource_memory == "enflame.com/gcu-memory"
    assert cfg_of(hc, "KunlunVXPU").resource_memory == "kunlunxin.com/vxpu-memory"
    assert all(c.enabled for c in hc.devices)


def test_configmap_shape_is_the_same_file():
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "hami-scheduler-device", "namespace": "kube-system"},
        "data": {"device-config.yaml": DEVICE_CONFIG},
    }
    hc = read_hami_config(cm)
    assert hc.shape == "configmap"
    assert hc.devices == read_hami_config(yaml.safe_load(DEVICE_CONFIG)).devices
    with pytest.raises(HamiConfigError, match="needs 'device-config.yaml'"):
        read_hami_config({**cm, "data": {"other.yaml": ""}})
    with pytest.raises(HamiConfigError, match="data.device-config.yaml: invalid YAML"):
        read_hami_config({**cm, "data": {"device-config.yaml": "nvidia: [unclosed"}})


def test_values_shape_renders_like_the_chart():
    hc = read_hami_config(yaml.safe_load(VALUES))
    assert hc.shape == "values"
    nv = cfg_of(hc, "NVIDIA")
    assert (nv.resource_memory, nv.split_count, nv.memory_scaling) == ("example.com/vram", 5, 1.5)
    mlu = cfg_of(hc, "MLU")
    assert (mlu.resource_memory, mlu.resource_cores) == (
        "cambricon.com/mlu370.smlu.vmemory",
        "cambricon.com/mlu370.smlu.vcore",
    )
    assert (hc.node_policy, hc.device_policy) == ("spread", "topology-aware")
    # devices.ascend.enabled false: HAMi leaves Ascend out; iluvatar switched on
    assert not [c for c in hc.devices if c.vendor == "Ascend"]
    assert [c.chip for c in hc.devices if c.vendor == "Iluvatar"] == [
        "MR-V100",
        "MR-V50",
        "BI-V150",
        "BI-V100",
    ]
    assert any("devices.ascend.enabled" in w for w in hc.warnings)


def test_values_content_replaces_the_device_config_and_legacy_defaults_map():
    values = {
        "device-config": {"content": "nvidia:\n  deviceSplitCount: 3\n"},
        "scheduler": {"defaultMem": 2048, "defaultCores": 30, "defaultGPUNum": 2},
        "devices": {"ascend": {"enabled": True, "hamiVnpuCore": True}},
    }
    hc = read_hami_config(values)
    nv = cfg_of(hc, "NVIDIA")
    assert (nv.split_count, nv.default_memory_mib, nv.default_cores_percent, nv.default_count) == (
        3,
        2048,
        30,
        2,
    )
    assert hc.hami_vnpu_core is True
    assert [c.chip for c in hc.devices if c.vendor == "Ascend"][0] == "Ascend910A"


def test_old_vnpus_list_and_cambricon_models():
    hc = read_hami_config(
        {
            "vnpus": [
                {
                    "commonWord": "Ascend910B4",
                    "chipName": "910B4",
                    "memoryAllocatable": 32768,
                    "templates": [{"name": "vir05_1c_8g", "memory": 8192}],
                }
            ],
            "cambricon": {
                "models": [
                    {"name": "MLU370-X8"},
                    {"name": "MLU590", "memoryFactor": 0, "memoryAllocatable": 79872},
                ]
            },
        }
    )
    assert [c.chip for c in hc.devices if c.vendor == "Ascend"] == ["Ascend910B4"]
    m370, m590 = (cfg_of(hc, "MLU", "MLU370-X8"), cfg_of(hc, "MLU", "MLU590"))
    assert (m370.resource_memory, m370.memory_factor) == ("cambricon.com/mlu370.smlu.vmemory", 256)
    assert (m590.resource_cores, m590.memory_factor, m590.memory_mib) == (
        "cambricon.com/mlu590.smlu.vcore",
        0,
        79872,
    )


def test_legacy_mig_geometries_warn_and_empty_means_defaults():
    hc = read_hami_config({"nvidia": {"knownMigGeometries": []}})
    assert hc.warnings and "knownMigGeometries" in hc.warnings[0]
    assert read_hami_config(None).shape == read_hami_config({}).shape == "default"
    assert cfg_of(read_hami_config(None), "NVIDIA").split_count == 10


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nvidia": {"deviceSplitCont": 3}}, "config nvidia.deviceSplitCont: unknown key"),
        ({"nvidai": {}}, "config nvidai: unknown key"),
        ({"scheduler": {"bogus": 1}}, "config scheduler.bogus: unknown key"),
        ({"devicePlugin": {"splitCount": 1}}, "config devicePlugin.splitCount: unknown key"),
        (
            {"resourceName": "x", "devices": {"ascend": {"enable": True}}},
            "config devices.ascend.enable: unknown key",
        ),
        (
            {
                "vnpus": {
                    "configs": [
                        {
                            "commonWord": "A",
                            "memoryAllocatable": 1,
                            "bogus": 1,
                            "templates": [{"name": "t", "memory": 1}],
                        }
                    ]
                }
            },
            r"config vnpus\[0\].bogus: unknown key",
        ),
        (
            {"cambricon": {"models": [{"name": "MLU370", "unit": 1}]}},
            r"config cambricon.models\[0\].unit: unknown key",
        ),
        ({"nvidia": {"deviceSplitCount": "ten"}}, "config nvidia.deviceSplitCount: must be an int"),
        ({"nvidia": {"deviceMemoryScaling": 0}}, "must be a positive number"),
        (
            {"nvidia": {"migProfileAllowlist": [{"models": ["A30"], "profiles": ["big"]}]}},
            r"migProfileAllowlist\[0\].profiles: 'big' is not",
        ),
        ({"gpuSchedulerPolicy": "pack"}, "config gpuSchedulerPolicy: 'pack' not"),
        (
            {"scheduler": {"defaultSchedulerPolicy": {"nodeSchedulerPolicy": "x"}}},
            "config nodeSchedulerPolicy: 'x' not",
        ),
        (
            {"kind": "ConfigMap", "data": {"device-config.yaml": "nvidia: {bogus: 1}"}},
            "config nvidia.bogus: unknown key",
        ),
        ("nvidia", "must be a mapping"),
    ],
)
def test_errors_name_the_key(data, message):
    with pytest.raises(HamiConfigError, match=message):
        read_hami_config(data)


def test_scheduler_policies_in_any_case_are_the_words():
    hc = read_hami_config(
        {"scheduler": {"defaultSchedulerPolicy": {"nodeSchedulerPolicy": " Spread "}}}
    )
    assert hc.node_policy == "spread"
    hc = read_hami_config({"gpuSchedulerPolicy": "Topology-Aware"})
    assert hc.device_policy == "topology-aware"
