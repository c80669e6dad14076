"""Manifest builders: exact values per vendor, names, and schema validation.

Every emitted object is validated with kubernetes-validate (strict: unknown fields fail)
against the schema of the Kubernetes version that introduced the fields it uses: Pods with
``resourceClaims`` and resource.k8s.io/v1 claims with ``capacity.requests`` -> 1.34;
v1beta2 claims without capacity -> 1.33; v1beta1 claims without capacity -> 1.32.
"""

from __future__ import annotations

import re

import kubernetes_validate
import pytest

from scheduling.kube.manifests import (
    ContainerSpec,
    DraDriver,
    JobMeta,
    ManifestError,
    build,
    build_dra,
    build_hami,
    build_whole,
    claim_name,
    dns_label,
    owner_reference_patch,
    pod_name,
)
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment

JOB = JobMeta("acme", "job-42", "pl-7", "team-a", ContainerSpec("vllm:0.6", ("serve",)))


def validate(obj: dict, version: str) -> None:
    kubernetes_validate.validate(obj, version, strict=True)


def grant(uuid: str, vendor: str, mem: int, cores: int, type_: str = "", **kw) -> DeviceGrant:
    return DeviceGrant(uuid, type_ or vendor, mem, cores, vendor=vendor, **kw)


def one(devices: tuple[DeviceGrant, ...], cpu: int = 4000, mem: int = 8192) -> PodAssignment:
    return PodAssignment(
        "worker-0", "node-1", (ContainerAssignment("main", devices),), cpu_milli=cpu, memory_mib=mem
    )


def limits(m) -> dict:
    return m.pod["spec"]["containers"][0]["resources"]["limits"]


# -- names ------------------------------------------------------------------------------


def test_names_are_deterministic_dns_labels() -> None:
    assert pod_name("pl-7", "team-a/worker-0") == "p-pl-7-worker-0"
    assert claim_name("p-pl-7-worker-0") == "p-pl-7-worker-0-dev"
    long = pod_name("x" * 80, "w")
    assert len(long) == 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", long)
    assert long == pod_name("x" * 80, "w")
    assert pod_name("x" * 80, "w") != pod_name("x" * 80, "v")
    # cleaned names get a hash so that "A_B" and "a-b" do not collide
    assert dns_label("a-b") == "a-b"
    assert dns_label("A_B").startswith("a-b-") and dns_label("A_B") != "a-b"
    with pytest.raises(ManifestError):
        dns_label("___")


# -- hami -------------------------------------------------------------------------------


def test_hami_nvidia_two_gpus() -> None:
    m = build_hami(
        one((grant("GPU-a", "NVIDIA", 20000, 30), grant("GPU-b", "NVIDIA", 20000, 30))), JOB
    )
    validate(m.pod, "1.34.0")
    pod = m.pod
    assert pod["metadata"]["name"] == "p-pl-7-worker-0"
    assert pod["metadata"]["namespace"] == "team-a"
    assert pod["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "llmops-console",
        "console.llmops.io/tenant": "acme",
        "console.llmops.io/job": "job-42",
        "console.llmops.io/placement": "pl-7",
        "console.llmops.io/pod": "worker-0",
    }
    assert pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] == "GPU-a,GPU-b"
    assert pod["spec"]["schedulerName"] == "hami-scheduler"
    assert pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
    ]
    assert limits(m) == {
        "cpu": "4000m",
        "memory": "8192Mi",
        "nvidia.com/gpu": "2",
        "nvidia.com/gpumem": "20000",
        "nvidia.com/gpucores": "30",
    }
    assert m.claims == ()


def test_hami_vendor_units() -> None:
    # Cambricon: vmemory in 256 MiB units rounded up (1000 MiB -> 4 units)
    m = build_hami(one((grant("MLU-0", "MLU", 1000, 40),)), JOB)
    assert limits(m)["cambricon.com/vmlu"] == "1"
    assert limits(m)["cambricon.com/mlu.smlu.vmemory"] == "4"
    assert limits(m)["cambricon.com/mlu.smlu.vcore"] == "40"
    assert m.pod["metadata"]["annotations"]["cambricon.com/use-gpuuuid"] == "MLU-0"
    validate(m.pod, "1.34.0")
    # Hygon DCU
    m = build_hami(one((grant("DCU-0", "DCU", 4096, 50),)), JOB)
    assert {k: v for k, v in limits(m).items() if k.startswith("hygon")} == {
        "hygon.com/dcunum": "1",
        "hygon.com/dcumem": "4096",
        "hygon.com/dcucores": "50",
    }
    assert m.pod["metadata"]["annotations"]["hygon.com/use-gpuuuid"] == "DCU-0"
    # Mthreads: memory in 512 MiB units, cores in 1/16 of a GPU (50% -> 8)
    m = build_hami(one((grant("MT-0", "Mthreads", 2048, 50),)), JOB)
    assert limits(m)["mthreads.com/sgpu-memory"] == "4"
    assert limits(m)["mthreads.com/sgpu-core"] == "8"
    assert m.pod["metadata"]["annotations"]["mthreads.ai/use-gpuuuid"] == "MT-0"
    # Metax sGPU: a bare number would be GiB, so MiB carry the Mi suffix
    m = build_hami(one((grant("MX-0", "MetaxSGPU", 6144, 30),)), JOB)
    assert limits(m)["metax-tech.com/vmemory"] == "6144Mi"
    validate(m.pod, "1.34.0")


def test_hami_ascend_template_soft_split_and_whole() -> None:
    hard = build_hami(
        one((grant("NPU-1", "Ascend", 16384, 25, "Ascend910B3", template="vir05_1c_16g"),)), JOB
    )
    assert {k: v for k, v in limits(hard).items() if k.startswith("huawei")} == {
        "huawei.com/Ascend910B3": "1",
        "huawei.com/Ascend910B3-memory": "16384",
    }
    assert hard.pod["metadata"]["annotations"]["hami.io/use-Ascend910B3-uuid"] == "NPU-1"
    assert "huawei.com/vnpu-mode" not in hard.pod["metadata"]["annotations"]
    soft = build_hami(one((grant("NPU-1", "Ascend", 10000, 30, "Ascend910B3"),)), JOB)
    assert soft.pod["metadata"]["annotations"]["huawei.com/vnpu-mode"] == "hami-core"
    assert limits(soft)["huawei.com/Ascend910B3-core"] == "30"
    whole = build_hami(
        one(
            (
                grant("NPU-1", "Ascend", 65536, 100, "Ascend910B3"),
                grant("NPU-2", "Ascend", 65536, 100, "Ascend910B3"),
            )
        ),
        JOB,
    )
    assert {k: v for k, v in limits(whole).items() if k.startswith("huawei")} == {
        "huawei.com/Ascend910B3": "2"
    }
    validate(whole.pod, "1.34.0")


def test_hami_mig_sets_vgpu_mode() -> None:
    m = build_hami(
        one((grant("GPU-a", "NVIDIA", 9856, 14, mig_profile="1g.10gb", mig_start=0, mig_size=1),)),
        JOB,
    )
    assert m.pod["metadata"]["annotations"]["nvidia.com/vgpu-mode"] == "mig"
    assert limits(m)["nvidia.com/gpumem"] == "9856"


def test_hami_multi_container_with_init() -> None:
    a = PodAssignment(
        "w",
        "node-1",
        (
            ContainerAssignment("warm", (grant("GPU-a", "NVIDIA", 1000, 10),), init=True),
            ContainerAssignment("main", (grant("GPU-a", "NVIDIA", 3000, 20),)),
            ContainerAssignment("side", ()),
        ),
        cpu_milli=1000,
        memory_mib=1024,
    )
    m = build_hami(a, JOB)
    validate(m.pod, "1.34.0")
    (init,) = m.pod["spec"]["initContainers"]
    assert init["resources"]["limits"] == {
        "nvidia.com/gpu": "1",
        "nvidia.com/gpumem": "1000",
        "nvidia.com/gpucores": "10",
    }
    main, side = m.pod["spec"]["containers"]
    assert main["resources"]["limits"]["nvidia.com/gpumem"] == "3000"
    assert main["resources"]["limits"]["cpu"] == "1000m"
    assert side["resources"] == {}
    assert m.pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] == "GPU-a"


def test_hami_errors() -> None:
    with pytest.raises(ManifestError, match="no HAMi resource names"):
        build_hami(one((grant("X-0", "Unknown", 1, 1),)), JOB)
    with pytest.raises(ManifestError, match="no vendor"):
        build_hami(one((DeviceGrant("GPU-a", "NVIDIA", 1, 1),)), JOB)
    with pytest.raises(ManifestError, match="no app container"):
        build_hami(PodAssignment("w", "n", (ContainerAssignment("i", (), init=True),)), JOB)
    with pytest.raises(ManifestError, match="unknown submission mode"):
        build("kueue", one(()), JOB)


# -- whole ------------------------------------------------------------------------------


def test_whole_mode_counts_only() -> None:
    m = build_whole(
        one(
            (
                grant("NPU-1", "Ascend", 65536, 100, "Ascend910B3"),
                grant("NPU-2", "Ascend", 65536, 100, "Ascend910B3"),
            )
        ),
        JOB,
    )
    validate(m.pod, "1.34.0")
    assert limits(m) == {"cpu": "4000m", "memory": "8192Mi", "huawei.com/Ascend910": "2"}
    assert "schedulerName" not in m.pod["spec"]
    assert not any(k.endswith("uuid") for k in m.pod["metadata"]["annotations"])
    with pytest.raises(ManifestError, match="whole mode needs whole devices"):
        build_whole(one((grant("GPU-a", "NVIDIA", 1000, 50),)), JOB)


# -- dra --------------------------------------------------------------------------------


def test_dra_v1_claim_with_consumable_capacity() -> None:
    m = build_dra(
        one(
            (
                grant("GPU-a", "NVIDIA", 20000, 30),
                grant("GPU-b", "NVIDIA", 20000, 30),
                grant("GPU-c", "NVIDIA", 8000, 10),
            )
        ),
        JOB,
    )
    (claim,) = m.claims
    validate(claim, "1.34.0")
    validate(m.pod, "1.34.0")
    assert claim["metadata"]["name"] == "p-pl-7-worker-0-dev"
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "main-0",
            "exactly": {
                "deviceClassName": "hami-core-gpu.project-hami.io",
                "allocationMode": "ExactCount",
                "count": 2,
                "capacity": {"requests": {"memory": "20000Mi", "cores": "30"}},
                "selectors": [
                    {
                        "cel": {
                            "expression": 'device.driver == "hami-core-gpu.project-hami.io" && device.attributes['  # noqa: E501
                            '"hami-core-gpu.project-hami.io"].uuid in ["GPU-a", "GPU-b"]'
                        }
                    }
                ],
            },
        },
        {
            "name": "main-1",
            "exactly": {
                "deviceClassName": "hami-core-gpu.project-hami.io",
                "allocationMode": "ExactCount",
                "count": 1,
                "capacity": {"requests": {"memory": "8000Mi", "cores": "10"}},
                "selectors": [
                    {
                        "cel": {
                            "expression": 'device.driver == "hami-core-gpu.project-hami.io" && device.attributes['  # noqa: E501
                            '"hami-core-gpu.project-hami.io"].uuid == "GPU-c"'
                        }
                    }
                ],
            },
        },
    ]
    assert m.pod["spec"]["resourceClaims"] == [
        {"name": "devices", "resourceClaimName": "p-pl-7-worker-0-dev"}
    ]
    assert m.pod["spec"]["containers"][0]["resources"]["claims"] == [
        {"name": "devices", "request": "main-0"},
        {"name": "devices", "request": "main-1"},
    ]
    assert "nvidia.com/gpu" not in limits(m)


def test_dra_v1_claim_does_not_validate_before_1_34() -> None:
    m = build_dra(one((grant("GPU-a", "NVIDIA", 20000, 30),)), JOB)
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        validate(m.claims[0], "1.33.0")  # resource.k8s.io/v1 does not exist in 1.33


def test_dra_partition_device_by_parent_and_profile() -> None:
    m = build_dra(
        one((grant("GPU-a", "NVIDIA", 9856, 14, mig_profile="1g.10gb", mig_start=2, mig_size=1),)),
        JOB,
    )
    (req,) = m.claims[0]["spec"]["devices"]["requests"]
    assert req["exactly"]["count"] == 1 and "capacity" not in req["exactly"]
    assert req["exactly"]["selectors"][0]["cel"]["expression"] == (
        'device.driver == "hami-core-gpu.project-hami.io" && '
        'device.attributes["hami-core-gpu.project-hami.io"].parentUUID == "GPU-a" && '
        'device.attributes["hami-core-gpu.project-hami.io"].profile == "1g.10gb"'
    )
    validate(m.claims[0], "1.34.0")


def test_dra_older_api_versions() -> None:
    whole_driver = {
        "NVIDIA": DraDriver("gpu.nvidia.com", "gpu.nvidia.com", consumable_capacity=False)
    }
    a = one((grant("GPU-a", "NVIDIA", 81920, 100), grant("GPU-b", "NVIDIA", 81920, 100)))
    beta2 = build_dra(a, JOB, api_version="resource.k8s.io/v1beta2", drivers=whole_driver)
    validate(beta2.claims[0], "1.33.0")
    beta1 = build_dra(a, JOB, api_version="resource.k8s.io/v1beta1", drivers=whole_driver)
    validate(beta1.claims[0], "1.32.0")
    assert beta1.claims[0]["spec"]["devices"]["requests"] == [
        {
            "name": "main-0",
            "deviceClassName": "gpu.nvidia.com",
            "allocationMode": "ExactCount",
            "count": 2,
            "selectors": [
                {
                    "cel": {
                        "expression": 'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].uuid '  # noqa: E501
                        'in ["GPU-a", "GPU-b"]'
                    }
                }
            ],
        }
    ]
    # v1beta1 with consumable capacity needs the 1.34 schema
    shared = build_dra(
        one((grant("GPU-a", "NVIDIA", 1000, 10),)), JOB, api_version="resource.k8s.io/v1beta1"
    )
    validate(shared.claims[0], "1.34.0")
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(shared.claims[0], "1.32.0")
    with pytest.raises(ManifestError, match="cannot share"):
        build_dra(one((grant("GPU-a", "NVIDIA", 1000, 10),)), JOB, drivers=whole_driver)


def test_dra_errors_and_pod_without_devices() -> None:
    with pytest.raises(ManifestError, match="no DRA driver configured for vendor 'MLU'"):
        build_dra(one((grant("MLU-0", "MLU", 1000, 10),)), JOB)
    m = build_dra(one(()), JOB)
    assert m.claims == () and "resourceClaims" not in m.pod["spec"]
    validate(m.pod, "1.34.0")


def test_owner_reference_patch() -> None:
    assert owner_reference_patch({"metadata": {"name": "p", "uid": "u-1"}}) == {
        "metadata": {
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1"}]
        }
    }
    with pytest.raises(ManifestError):
        owner_reference_patch({"metadata": {"name": "p"}})
