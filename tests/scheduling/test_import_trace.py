"""``import_trace`` on the real Alibaba trace (read from ../shared/data, never copied)."""

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from scheduling.models import Device, Job, Node
from tenants.models import Quota, Tenant

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "alibaba-gpu-v2023"
NODES = DATA / "openb_node_list_gpu_node.csv"
PODS = DATA / "openb_pod_list_default.csv"

pytestmark = pytest.mark.django_db


@pytest.mark.skipif(not NODES.exists(), reason="../shared/data is not beside the checkout")
def test_import_default_trace_counts(capsys):
    call_command("import_trace", "--nodes", NODES, "--pods", PODS, "--tenants", "4", "--no-place")
    assert Node.objects.count() == 1213
    assert Device.objects.count() == 6212
    assert Job.objects.count() == 8152
    assert Tenant.objects.count() == 4
    # jobs spread round-robin: 8152 / 4 = 2038 each
    assert Job.objects.filter(tenant__name="openb-tenant-1").count() == 2038
    # openb-pod-0001: 1 GPU at 460 milli, 6 vCPU, 12 GiB
    job = Job.objects.get(name="openb-pod-0001")
    container = job.containers.get()
    assert (job.cpu_milli, job.host_memory_mib) == (6000, 12288)
    assert (container.device_count, container.cores_percent, container.memory_percent) == (
        1,
        46,
        46,
    )
    assert job.duration_s == 12902960 - 427061
    assert Quota.objects.get(tenant__name="openb-tenant-1", dimension="devices").nominal == (
        6212 * 1000
    )
    assert "1213 nodes, 6212 devices, 8152 jobs over 4 tenants" in capsys.readouterr().out


def test_bad_csv_names_file_line_and_column(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,two,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n")
    with pytest.raises(CommandError) as err:
        call_command("import_trace", "--nodes", nodes, "--pods", pods)
    message = str(err.value)
    assert message.endswith("nodes.csv:2 column 'gpu': expected an integer, found 'two'")
    assert Node.objects.count() == 0


def test_existing_cluster_name_is_refused(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n")
    call_command("import_trace", "--nodes", nodes, "--pods", pods, "--cluster", "x", "--no-place")
    with pytest.raises(CommandError, match="cluster 'x' already exists"):
        call_command("import_trace", "--nodes", nodes, "--pods", pods, "--cluster", "x")
    assert Job.objects.count() == 1
