from django.contrib import admin, messages
from django.utils import timezone

from core.exceptions import DomainError
from scheduling.backends.kubernetes import check_connection
from scheduling.choices import JobState
from scheduling.kube.errors import KubeError
from scheduling.models import (
    Cluster,
    ConsolidationMove,
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
from scheduling.services.job_kinds import (
    cancel_any_job,
    reconcile_services,
    resume_notebook,
    stop_notebook,
)


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    """Clusters and their connection. Only *where* credentials are (in-cluster, a kubeconfig
    path, or the ``CLUSTER_<NAME>_KUBECONFIG`` environment variable) is stored or shown; the
    kubeconfig's contents never are."""

    list_display = [
        "name",
        "backend",
        "submission_mode",
        "namespace_pattern",
        "connection",
        "server_version",
        "inventory_synced_at",
    ]
    list_filter = ["backend", "submission_mode"]
    search_fields = ["name"]
    actions = ["test_connection"]
    readonly_fields = [
        "server_version",
        "resource_versions",
        "connection_checked_at",
        "watch_resource_version",
        "inventory_synced_at",
        "resynced_at",
        "inventory_errors",
        "unknown_pods",
        "created",
        "updated",
    ]
    fieldsets = [
        (None, {"fields": ["name", "backend", "description"]}),
        (
            "Kubernetes connection",
            {
                "fields": [
                    "in_cluster",
                    "kubeconfig_path",
                    "kube_context",
                    "namespace_pattern",
                    "submission_mode",
                    "hami_scheduler_name",
                    "request_timeout_s",
                ],
                "description": "Credentials stay in the kubeconfig file or the service account; "
                "with no path and not in-cluster the environment variable "
                "CLUSTER_&lt;NAME&gt;_KUBECONFIG names the kubeconfig file.",
            },
        ),
        ("Status", {"fields": readonly_fields}),
    ]

    @admin.display(description="connection")
    def connection(self, obj: Cluster) -> str:
        if obj.backend != "kubernetes":
            return "-"
        if obj.in_cluster:
            return "in-cluster service account"
        if obj.kubeconfig_path:
            return "kubeconfig file" + (
                f" (context {obj.kube_context})" if obj.kube_context else ""
            )
        return f"${obj.kubeconfig_env()}"

    @admin.action(description="Test connection (server version, resource.k8s.io versions)")
    def test_connection(self, request, queryset) -> None:
        for cluster in queryset:
            if cluster.backend != "kubernetes":
                self.message_user(
                    request, f"{cluster.name}: simulated, nothing to test", messages.INFO
                )
                continue
            try:
                info = check_connection(cluster)
            except KubeError as exc:
                self.message_user(
                    request, f"{cluster.name}: connection failed: {exc.message}", messages.ERROR
                )
                continue
            served = ", ".join(info.resource_versions) or "none (no DRA API)"
            mode_note = ""
            if cluster.submission_mode == "dra" and info.dra_version is None:
                mode_note = "; submission mode dra needs resource.k8s.io"
            self.message_user(
                request,
                f"{cluster.name}: Kubernetes {info.git_version}; resource.k8s.io "
                f"served: {served}; DRA version used: {info.dra_version or '-'}"
                f"{mode_note}",
                messages.WARNING if mode_note else messages.SUCCESS,
            )


@admin.register(DeviceModel)
class DeviceModelAdmin(admin.ModelAdmin):
    """Device models; the form validates ``config`` against the catalogue (``clean``)."""

    list_display = ["name", "vendor", "family", "slicing_mode", "topology", "error"]
    list_filter = ["vendor"]
    search_fields = ["name", "vendor"]
    readonly_fields = ["error"]


class DeviceInline(admin.TabularInline):
    model = Device
    extra = 0
    fields = ["uuid", "model", "index", "memory_mib", "cores_percent", "healthy", "cordoned"]
    show_change_link = True


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "cluster", "cpu_milli", "host_memory_mib", "schedulable", "error"]
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
    list_display = ["name", "tenant", "resource_group", "strategy", "max_min_runtime_s"]
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
    """Jobs of every kind. A new inference service gets its replica jobs once its
    containers are saved; the actions stop / resume notebooks and stop services with their
    replicas (the same services as the API)."""

    list_display = [
        "id",
        "name",
        "kind",
        "tenant",
        "queue",
        "priority",
        "state",
        "parent",
        "created",
    ]
    list_filter = ["kind", "state", "tenant", "source", "allow_consolidation"]
    list_select_related = ["tenant", "queue__tenant"]
    search_fields = ["name"]
    raw_id_fields = ["submitted_by", "parent"]
    inlines = [JobContainerInline, JobEventInline]
    actions = ["stop_notebooks", "resume_notebooks", "cancel_jobs"]

    def save_model(self, request, obj, form, change):
        if not change and obj.is_service:
            obj.state, obj.started_at = JobState.RUNNING, timezone.now()
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if form.instance.is_service:
            reconcile_services()

    def _each(self, request, queryset, action, verb: str) -> None:
        done = 0
        for job in queryset:
            try:
                action(job, user=request.user)
                done += 1
            except DomainError as exc:
                self.message_user(request, f"{job}: {exc.message}", messages.WARNING)
        self.message_user(request, f"{done} job(s) {verb}.")

    @admin.action(description="Stop selected notebooks (free their devices)")
    def stop_notebooks(self, request, queryset):
        self._each(request, queryset, stop_notebook, "stopped")

    @admin.action(description="Resume selected notebooks")
    def resume_notebooks(self, request, queryset):
        self._each(request, queryset, resume_notebook, "resumed")

    @admin.action(description="Cancel selected jobs (a service with its replicas)")
    def cancel_jobs(self, request, queryset):
        self._each(request, queryset, cancel_any_job, "cancelled")


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


@admin.register(ConsolidationMove)
class ConsolidationMoveAdmin(admin.ModelAdmin):
    """Jobs moved by consolidation (append-only audit: read-only here)."""

    list_display = ["time", "job", "for_job", "resource_group", "source", "target", "pin"]
    list_filter = ["resource_group", "pin"]
    list_select_related = ["job__tenant", "for_job__tenant", "resource_group"]
    raw_id_fields = ["job", "for_job"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
