from django.db import migrations


class Migration(migrations.Migration):
    """One meaning per name: a pod set's host RAM per pod is ``host_memory_mib``, as on jobs,
    nodes and placements (issue 12)."""

    dependencies = [("scheduling", "0014_host_and_device_memory_mib")]

    operations = [
        migrations.RenameField(
            model_name="jobpodset", old_name="memory_mib", new_name="host_memory_mib"
        )
    ]
