# ruff: noqa: E501 - exposition lines are as long as exporters write them
"""Exposition payloads per exporter, written by hand from the documented metric names
(shared/docs/hami.md §6; dcgm-exporter default counters; Ascend npu-exporter; Cambricon
mlu-exporter with --metrics-prefix=mlu; Hygon dcu-exporter). Values are chosen so results can
be checked by hand: 1 GiB = 1073741824 bytes = 1024 MiB."""

HAMI_SCHEDULER = """\
# HELP hami_gpu_memory_limit_bytes GPU device memory limit
# TYPE hami_gpu_memory_limit_bytes gauge
hami_gpu_memory_limit_bytes{device_index="0",device_type="NVIDIA-A100-SXM4-80GB",device_uuid="GPU-aaaa",node="gpu-node-1",zone="vGPU"} 8.589934592e+10
# HELP hami_gpu_memory_allocated_bytes GPU device memory allocated
# TYPE hami_gpu_memory_allocated_bytes gauge
hami_gpu_memory_allocated_bytes{device_cores="30",device_index="0",device_type="NVIDIA-A100-SXM4-80GB",device_uuid="GPU-aaaa",node="gpu-node-1",zone="vGPU"} 2.147483648e+10
# HELP hami_gpu_core_allocated_ratio GPU core allocated
# TYPE hami_gpu_core_allocated_ratio gauge
hami_gpu_core_allocated_ratio{device_index="0",device_type="NVIDIA-A100-SXM4-80GB",device_uuid="GPU-aaaa",node="gpu-node-1",zone="vGPU"} 30
# HELP hami_gpu_shared_count Number of containers sharing this GPU
# TYPE hami_gpu_shared_count gauge
hami_gpu_shared_count{device_index="0",device_type="NVIDIA-A100-SXM4-80GB",device_uuid="GPU-aaaa",node="gpu-node-1",zone="vGPU"} 1
# HELP hami_vgpu_memory_allocated_bytes vGPU memory allocated per container
# TYPE hami_vgpu_memory_allocated_bytes gauge
hami_vgpu_memory_allocated_bytes{container_index="0",device_uuid="GPU-aaaa",namespace="team-a",node="gpu-node-1",pod="POD_A",zone="vGPU"} 2.147483648e+10
# HELP hami_vgpu_core_allocated_ratio vGPU cores allocated per container
# TYPE hami_vgpu_core_allocated_ratio gauge
hami_vgpu_core_allocated_ratio{container_index="0",device_uuid="GPU-aaaa",namespace="team-a",node="gpu-node-1",pod="POD_A",zone="vGPU"} 30
"""

HAMI_SCHEDULER_LEGACY = """\
# HELP GPUDeviceMemoryAllocated Device memory allocated
# TYPE GPUDeviceMemoryAllocated gauge
GPUDeviceMemoryAllocated{devicecores="30",deviceidx="0",devicetype="NVIDIA-A100-SXM4-80GB",deviceuuid="GPU-aaaa",nodeid="gpu-node-1",zone="vGPU"} 2.147483648e+10
# HELP GPUDeviceCoreAllocated Device core allocated
# TYPE GPUDeviceCoreAllocated gauge
GPUDeviceCoreAllocated{deviceidx="0",devicetype="NVIDIA-A100-SXM4-80GB",deviceuuid="GPU-aaaa",nodeid="gpu-node-1",zone="vGPU"} 30
# HELP vGPUMemoryAllocated vGPU memory allocated from a container
# TYPE vGPUMemoryAllocated gauge
vGPUMemoryAllocated{containeridx="0",deviceuuid="GPU-aaaa",nodename="gpu-node-1",podname="POD_A",podnamespace="team-a",zone="vGPU"} 2.147483648e+10
# HELP QuotaUsed resourcequota usage for a certain device
# TYPE QuotaUsed gauge
QuotaUsed{limit="81920",quotaName="nvidia.com/gpumem",quotanamespace="team-a",zone="vGPU"} 20480
"""

HAMI_MONITOR = """\
# HELP hami_host_gpu_memory_used_bytes GPU device memory usage
# TYPE hami_host_gpu_memory_used_bytes gauge
hami_host_gpu_memory_used_bytes{device_index="0",device_type="NVIDIA-A100-SXM4-80GB",device_uuid="GPU-aaaa",node="gpu-node-1",zone="vGPU"} 1.6106127360e+10
# HELP hami_host_gpu_utilization_ratio GPU core utilization
# TYPE hami_host_gpu_utilization_ratio gauge
hami_host_gpu_utilization_ratio{device_index="0",device_type="NVIDIA-A100-SXM4-80GB",device_uuid="GPU-aaaa",node="gpu-node-1",zone="vGPU"} 27
# HELP hami_host_gpu_memory_controller_utilization_ratio memory controller utilization
# TYPE hami_host_gpu_memory_controller_utilization_ratio gauge
hami_host_gpu_memory_controller_utilization_ratio{device_index="0",device_type="NVIDIA-A100-SXM4-80GB",device_uuid="GPU-aaaa",zone="vGPU"} 12
# HELP hami_vgpu_memory_used_bytes vGPU device usage
# TYPE hami_vgpu_memory_used_bytes gauge
hami_vgpu_memory_used_bytes{container="main",device_uuid="GPU-aaaa",namespace="team-a",pod="POD_A",vdevice_index="0",zone="vGPU"} 1.5032385536e+10
# HELP hami_vgpu_memory_limit_bytes vGPU device limit
# TYPE hami_vgpu_memory_limit_bytes gauge
hami_vgpu_memory_limit_bytes{container="main",device_uuid="GPU-aaaa",namespace="team-a",pod="POD_A",vdevice_index="0",zone="vGPU"} 2.147483648e+10
# HELP hami_container_device_utilization_ratio Container device utilization
# TYPE hami_container_device_utilization_ratio gauge
hami_container_device_utilization_ratio{container="main",device_uuid="GPU-aaaa",namespace="team-a",pod="POD_A",vdevice_index="0",zone="vGPU"} 25
"""

HAMI_MONITOR_LEGACY = """\
# HELP HostGPUMemoryUsage GPU device memory usage
# TYPE HostGPUMemoryUsage gauge
HostGPUMemoryUsage{deviceidx="0",deviceuuid="GPU-aaaa",devicetype="NVIDIA-A100-SXM4-80GB",nodeid="gpu-node-1",zone="vGPU"} 1.6106127360e+10
# HELP HostCoreUtilization GPU core utilization
# TYPE HostCoreUtilization gauge
HostCoreUtilization{deviceidx="0",deviceuuid="GPU-aaaa",devicetype="NVIDIA-A100-SXM4-80GB",nodeid="gpu-node-1",zone="vGPU"} 27
# HELP vGPU_device_memory_usage_in_bytes vGPU device usage
# TYPE vGPU_device_memory_usage_in_bytes gauge
vGPU_device_memory_usage_in_bytes{ctrname="main",deviceuuid="GPU-aaaa",podname="POD_A",podnamespace="team-a",vdeviceid="0",zone="vGPU"} 1.5032385536e+10
# HELP Device_utilization_desc_of_container Container device utilization description
# TYPE Device_utilization_desc_of_container gauge
Device_utilization_desc_of_container{ctrname="main",deviceuuid="GPU-aaaa",podname="POD_A",podnamespace="team-a",vdeviceid="0",zone="vGPU"} 25
"""

# Two whole GPUs on one node plus a MIG instance series without pod labels on the second.
DCGM = """\
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-dddd-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",namespace="team-a",pod="POD_D0"} 88
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-dddd-1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",container="",namespace="",pod=""} 0
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-dddd-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",namespace="team-a",pod="POD_D0"} 61440
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-dddd-1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1"} 10240
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-dddd-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1"} 67
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-dddd-1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1"} 41
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-dddd-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1"} 612.5
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-dddd-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1"} 0
DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-dddd-1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1"} 79
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0",UUID="GPU-dddd-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1"} 0
# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-dddd-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1"} 0.91
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-dddd-1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-1",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1"} 0.42
"""

# npu-exporter has no node label: host series are attributed through the chip's vdie_id.
ASCEND = """\
# HELP npu_chip_info_utilization the ai core utilization
# TYPE npu_chip_info_utilization gauge
npu_chip_info_utilization{id="0",model_name="Ascend910B4",vdie_id="VDIE-910B4-0001",pcie_bus_info="0000:C1:00.0",namespace="",pod_name="",container_name=""} 63
npu_chip_info_utilization{id="1",model_name="Ascend910B4",vdie_id="VDIE-910B4-0002",pcie_bus_info="0000:C2:00.0",namespace="",pod_name="",container_name=""} 0
# HELP npu_chip_info_hbm_used_memory the npu hbm used memory
# TYPE npu_chip_info_hbm_used_memory gauge
npu_chip_info_hbm_used_memory{id="0",model_name="Ascend910B4",vdie_id="VDIE-910B4-0001",pcie_bus_info="0000:C1:00.0"} 20480
# HELP npu_chip_info_hbm_total_memory the npu hbm total memory
# TYPE npu_chip_info_hbm_total_memory gauge
npu_chip_info_hbm_total_memory{id="0",model_name="Ascend910B4",vdie_id="VDIE-910B4-0001",pcie_bus_info="0000:C1:00.0"} 32768
# HELP npu_chip_info_temperature the npu temperature
# TYPE npu_chip_info_temperature gauge
npu_chip_info_temperature{id="0",model_name="Ascend910B4",vdie_id="VDIE-910B4-0001",pcie_bus_info="0000:C1:00.0"} 52
# HELP npu_chip_info_health_status the npu health status
# TYPE npu_chip_info_health_status gauge
npu_chip_info_health_status{id="0",model_name="Ascend910B4",vdie_id="VDIE-910B4-0001",pcie_bus_info="0000:C1:00.0"} 1
npu_chip_info_health_status{id="1",model_name="Ascend910B4",vdie_id="VDIE-910B4-0002",pcie_bus_info="0000:C2:00.0"} 0
# HELP npu_chip_info_error_code the npu error code
# TYPE npu_chip_info_error_code gauge
npu_chip_info_error_code{id="1",model_name="Ascend910B4",vdie_id="VDIE-910B4-0002",pcie_bus_info="0000:C2:00.0"} 2350
# HELP machine_npu_nums Amount of npu installed on the machine.
# TYPE machine_npu_nums gauge
machine_npu_nums 2
"""

CAMBRICON = """\
# HELP mlu_utilization The utilization of Cambricon MLU, unit is '%'
# TYPE mlu_utilization gauge
mlu_utilization{driver="v5.10.22",mcu="v1.1.4",mlu="0",model="MLU370-X8",node="mlu-node-1",node_ip="10.0.0.21",sn="SN-MLU-0001",type="MLU370",uuid="MLU-8a3c1f00",vf=""} 71
mlu_utilization{driver="v5.10.22",mcu="v1.1.4",mlu="0",model="MLU370-X8",node="mlu-node-1",node_ip="10.0.0.21",sn="SN-MLU-0001",type="MLU370",uuid="MLU-8a3c1f00",vf="1"} 35
# HELP mlu_memory_used The used physical memory of Cambricon MLU, unit is 'B'
# TYPE mlu_memory_used gauge
mlu_memory_used{driver="v5.10.22",mcu="v1.1.4",mlu="0",model="MLU370-X8",node="mlu-node-1",node_ip="10.0.0.21",sn="SN-MLU-0001",type="MLU370",uuid="MLU-8a3c1f00"} 2.147483648e+10
# HELP mlu_memory_total The total physical memory of Cambricon MLU, unit is 'B'
# TYPE mlu_memory_total gauge
mlu_memory_total{driver="v5.10.22",mcu="v1.1.4",mlu="0",model="MLU370-X8",node="mlu-node-1",node_ip="10.0.0.21",sn="SN-MLU-0001",type="MLU370",uuid="MLU-8a3c1f00"} 5.1539607552e+10
# HELP mlu_temperature The board temperature of Cambricon MLU, unit is 'celsius'
# TYPE mlu_temperature gauge
mlu_temperature{driver="v5.10.22",mcu="v1.1.4",mlu="0",model="MLU370-X8",node="mlu-node-1",node_ip="10.0.0.21",sn="SN-MLU-0001",type="MLU370",uuid="MLU-8a3c1f00"} 58
# HELP mlu_health The health state of Cambricon MLU, 1 means health, 0 means sick
# TYPE mlu_health gauge
mlu_health{driver="v5.10.22",mcu="v1.1.4",mlu="0",model="MLU370-X8",node="mlu-node-1",node_ip="10.0.0.21",sn="SN-MLU-0001",type="MLU370",unhealth_reason="",uuid="MLU-8a3c1f00"} 1
# HELP mlu_container The k8s container info of Cambricon MLUs allocated
# TYPE mlu_container gauge
mlu_container{container="main",mlu="0",namespace="team-b",node="mlu-node-1",pod="some-other-pod",sn="SN-MLU-0001",uuid="MLU-8a3c1f00"} 1
"""

# Hygon minor_number repeats on every node; device_id is the serial.
HYGON = """\
# HELP dcu_utilizationrate dcu metrics of gauge
# TYPE dcu_utilizationrate gauge
dcu_utilizationrate{device_id="T8R1380013061601",minor_number="0",name="",node="dcunode3",pcieBus_number="0000:f6:00.0"} 44
dcu_utilizationrate{device_id="T8R1380019021101",minor_number="0",name="",node="dcunode4",pcieBus_number="0000:6a:00.0"} 3
# HELP dcu_usedmemory_bytes dcu metrics of gauge
# TYPE dcu_usedmemory_bytes gauge
dcu_usedmemory_bytes{device_id="T8R1380013061601",minor_number="0",name="",node="dcunode3",pcieBus_number="0000:f6:00.0"} 1.073741824e+10
# HELP dcu_memorycap_bytes dcu metrics of gauge
# TYPE dcu_memorycap_bytes gauge
dcu_memorycap_bytes{device_id="T8R1380013061601",minor_number="0",name="",node="dcunode3",pcieBus_number="0000:f6:00.0"} 3.4342961152e+10
# HELP dcu_temp dcu metrics of gauge
# TYPE dcu_temp gauge
dcu_temp{device_id="T8R1380013061601",minor_number="0",name="",node="dcunode3",pcieBus_number="0000:f6:00.0"} 46
dcu_temp{device_id="T8R1380019021101",minor_number="0",name="",node="dcunode4",pcieBus_number="0000:6a:00.0"} 47
# HELP dcu_power_usage dcu metrics of gauge
# TYPE dcu_power_usage gauge
dcu_power_usage{device_id="T8R1380013061601",minor_number="0",name="",node="dcunode3",pcieBus_number="0000:f6:00.0"} 171
"""

# A value that is not a number, a line with a broken label set, and a truncated last line.
MALFORMED = """\
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-dddd-0",Hostname="dgx-1"} 55
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-dddd-1",Hostname="dgx-1"} fifty
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-dddd-0",Hostname="dgx-1" 4096
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-dddd-0",Hostname="dgx-1"} NaN
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-dd"""

HTML_ERROR_PAGE = "<html><body><h1>502 Bad Gateway</h1></body></html>\n"
