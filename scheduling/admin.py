from django.contrib import admin

from scheduling.models import (
    Cluster,
    Device,
    DeviceModel,
    Job,
    JobContainer,
    JobEvent,
    Node,
    Placement,
    PlacementDevice,
    Queue,
)


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ["name", "backend", "created"]
    search_fields = ["name"]


@admin.register(DeviceModel)
class DeviceModelAdmin(admin.ModelAdmin):
    list_display = ["name", "vendor", "memory_mib", "cores_percent", "split_count", "slicing_mode"]
    list_filter = ["vendor", "slicing_mode"]
    search_fields = ["name", "vendor"]


class DeviceInline(admin.TabularInline):
    model = Device
    extra = 0
    fields = ["uuid", "model", "index", "memory_mib", "cores_percent", "healthy", "cordoned"]
    show_change_link = True


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "cluster", "cpu_milli", "memory_mib", "schedulable", "error"]
    list_filter = ["cluster", "schedulable"]
    list_select_related = ["cluster"]
    search_fields = ["name"]
    inlines = [DeviceInline]


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = ["uuid", "model", "node", "index", "memory_mib", "healthy", "cordoned"]
    list_filter = ["model", "healthy", "cordoned"]
    list_select_related = ["model", "node__cluster"]
    search_fields = ["uuid", "node__name"]
    raw_id_fields = ["node"]


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "resource_group", "strategy"]
    list_select_related = ["tenant", "resource_group"]


class JobContainerInline(admin.TabularInline):
    model = JobContainer
    extra = 0


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    readonly_fields = ["time", "kind", "message"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "tenant", "queue", "priority", "state", "created"]
    list_filter = ["state", "tenant", "source"]
    list_select_related = ["tenant", "queue__tenant"]
    search_fields = ["name"]
    raw_id_fields = ["submitted_by"]
    inlines = [JobContainerInline, JobEventInline]


class PlacementDeviceInline(admin.TabularInline):
    model = PlacementDevice
    extra = 0
    raw_id_fields = ["device"]


@admin.register(Placement)
class PlacementAdmin(admin.ModelAdmin):
    list_display = ["id", "job", "pod_index", "node", "state", "created"]
    list_filter = ["state"]
    list_select_related = ["job__tenant", "node__cluster"]
    raw_id_fields = ["job", "node"]
    inlines = [PlacementDeviceInline]
