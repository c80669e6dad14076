"""Kubernetes adapter: the only package of the console that imports ``kubernetes``.

Modules:
    client: build an ``ApiClient`` from explicit configuration; ``test_connection``.
    errors: classify API/transport failures (AlreadyExists / Retryable / Permanent).
    manifests: pure builders from a placement to Pod / ResourceClaim dicts (hami, dra, whole).
    gateway: ``KubeGateway`` protocol and the ``KubernetesGateway`` implementation.
    inventory: Node / ResourceSlice objects to plain inventory records; pod phase mapping.
    slices: ResourceSlices (schema-checked) to DRA device records.
    limits: per-object bounds of the inventory and a depth-bounded JSON reader.
    hami: HAMi's codec (register / pod annotations, Helm config, quantities) and the
        ``place_from_kube`` what-if with its CLI (``manage.py place``).

Imports only ``kubernetes``, ``pydantic``, ``scheduling.placement`` and the standard library
(never Django or ``scheduling.models`` / ``scheduling.services``; shared/docs/STYLE.md §3).
"""
