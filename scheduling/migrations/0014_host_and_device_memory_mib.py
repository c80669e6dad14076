from django.db import migrations


class Migration(migrations.Migration):
    """One meaning per name: host RAM is ``host_memory_mib`` (jobs, nodes, placements), the memory
    a container asks of each device is ``device_memory_mib`` (issue 12)."""

    dependencies = [
        ("scheduling", "0013_job_annotations"),
    ]

    operations = [
        migrations.RenameField(model_name="job", old_name="memory_mib", new_name="host_memory_mib"),
        migrations.RenameField(model_name="node", old_name="memory_mib", new_name="host_memory_mib"),
        migrations.RenameField(
            model_name="placement", old_name="memory_mib", new_name="host_memory_mib"
        ),
        migrations.RenameField(
            model_name="jobcontainer", old_name="memory_mib", new_name="device_memory_mib"
        ),
    ]
