"""Rewrite the "admitted ...; preempted <ids>" events written before issue 15, which named the
job ids of victims of other tenants to the preemptor's tenant: victims of the preemptor's own
tenant keep their ids, the others are only counted (as ``preempted_text`` writes it now)."""

from django.db import migrations

MARK = "; preempted "


def anonymise(apps, schema_editor):
    JobEvent = apps.get_model("scheduling", "JobEvent")
    Preemption = apps.get_model("scheduling", "Preemption")
    events = JobEvent.objects.filter(kind="admitted", message__contains=MARK)
    for event in events.iterator():
        head = event.message.split(MARK, 1)[0]
        victims = list(Preemption.objects.filter(preemptor_id=event.job_id)
                       .values_list("victim_id", "victim_tenant", "preemptor_tenant"))
        own = [str(v) for v, vt, pt in victims if vt == pt]
        others = len(victims) - len(own)
        parts = [", ".join(own)] if own else []
        if others:
            parts.append(f"{others} job{'s' if others > 1 else ''} of another tenant")
        tail = f"{MARK}{' and '.join(parts)}" if parts else ""
        if head + tail != event.message:
            JobEvent.objects.filter(pk=event.pk).update(message=head + tail)


class Migration(migrations.Migration):

    dependencies = [
        ('scheduling', '0009_admission_policies'),
    ]

    operations = [
        migrations.RunPython(anonymise, migrations.RunPython.noop),
    ]
