"""The Pod Security Standards checks of scheduling.kube.pod_security (pure): the baseline
controls read from a pod spec, and which of two levels is stricter."""

from __future__ import annotations

import pytest

from scheduling.kube.pod_security import BASELINE_CAPABILITIES, baseline_violations, stricter


def test_a_default_pod_spec_breaks_nothing() -> None:
    spec = {"containers": [{"name": "main", "image": "busybox:1.37", "ports": [{"hostPort": 0}]}]}
    assert baseline_violations(spec, "spec") == []


def test_every_container_list_and_windows_host_process_are_checked() -> None:
    spec = {
        "securityContext": {"windowsOptions": {"hostProcess": True}},
        "containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["CAP_CHOWN"]}}}],
        "ephemeralContainers": [{"name": "debug", "securityContext": {"privileged": True}}],
    }
    assert baseline_violations(spec, "spec") == [
        "spec.securityContext.windowsOptions.hostProcess: true",
        # compared as written, as Pod Security Admission does
        "spec.containers[0].securityContext.capabilities.add: CAP_CHOWN",
        "spec.ephemeralContainers[0].securityContext.privileged: true",
    ]


def test_baseline_lets_its_thirteen_capabilities_be_added() -> None:
    spec = {
        "containers": [
            {"securityContext": {"capabilities": {"add": sorted(BASELINE_CAPABILITIES)}}}
        ]
    }
    assert len(BASELINE_CAPABILITIES) == 13 and baseline_violations(spec, "spec") == []


@pytest.mark.parametrize("garbage", [None, "x", ["y"], {"containers": "z", "volumes": 3}])
def test_a_malformed_spec_has_no_violation_and_raises_nothing(garbage) -> None:
    assert baseline_violations(garbage, "spec") == []


@pytest.mark.parametrize(
    ("a", "b", "out"),
    [
        ("baseline", "restricted", "restricted"),
        ("restricted", "privileged", "restricted"),
        ("privileged", "baseline", "baseline"),
        ("nonsense", "baseline", "baseline"),
    ],
)
def test_stricter(a: str, b: str, out: str) -> None:
    assert stricter(a, b) == out
