"""Serializers of the scheduling API, one module per concept:

* :mod:`.submit` - input of job submission (job, containers, queue) into a ``JobSpec``;
* :mod:`.jobs` - read shapes of jobs, their containers, placements, events and preemptions;
* :mod:`.queues` - queues and priority classes (read, and the queue policy input);
* :mod:`.inventory` - nodes and devices (read, and the device cordon input);
* :mod:`.fields` - the vendor field and the unknown-field check the inputs share.

The names are re-exported here, so ``from scheduling.api.serializers import X`` keeps working.
"""

from __future__ import annotations

from scheduling.api.serializers.fields import RejectUnknownFieldsMixin, VendorField
from scheduling.api.serializers.inventory import (
    DeviceCordonSerializer,
    DeviceSerializer,
    NodeSerializer,
)
from scheduling.api.serializers.jobs import (
    JobContainerSerializer,
    JobEventSerializer,
    JobSerializer,
    PlacementSerializer,
    PreemptionSerializer,
)
from scheduling.api.serializers.queues import (
    QUEUE_POLICY_FIELDS,
    PriorityClassSerializer,
    QueueSerializer,
    QueueWriteSerializer,
)
from scheduling.api.serializers.submit import (
    ENV_NAME,
    MAX_BATCH_JOBS,
    ContainerInputSerializer,
    JobBatchResultSerializer,
    JobBatchSerializer,
    JobSubmitSerializer,
    QueueField,
)

# The vendor words the submit form (console/dashboards/forms.py) offers, imported from here.
from scheduling.choices import VENDORS

__all__ = [
    "ENV_NAME",
    "MAX_BATCH_JOBS",
    "QUEUE_POLICY_FIELDS",
    "VENDORS",
    "ContainerInputSerializer",
    "DeviceCordonSerializer",
    "DeviceSerializer",
    "JobBatchResultSerializer",
    "JobBatchSerializer",
    "JobContainerSerializer",
    "JobEventSerializer",
    "JobSerializer",
    "JobSubmitSerializer",
    "NodeSerializer",
    "PlacementSerializer",
    "PreemptionSerializer",
    "PriorityClassSerializer",
    "QueueField",
    "QueueSerializer",
    "QueueWriteSerializer",
    "RejectUnknownFieldsMixin",
    "VendorField",
]
