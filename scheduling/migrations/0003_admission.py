# Admission core wiring (issue #5): device model family, job preemption contract,
# placement charges, preemption records. Hand-picked operations (other apps' pending fields
# are left to their own migrations).

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scheduling', '0002_kube_connection'),
    ]

    operations = [
        migrations.AddField(
            model_name='devicemodel',
            name='family',
            field=models.CharField(blank=True, help_text='Model family quota may name instead of the model (e.g. A100); blank = none.', max_length=100),
        ),
        migrations.AddField(
            model_name='job',
            name='min_runtime_s',
            field=models.FloatField(default=0.0, help_text='Seconds after admission during which the job cannot be preempted.', validators=[django.core.validators.MinValueValidator(0)]),
        ),
        migrations.AddField(
            model_name='job',
            name='on_preemption',
            field=models.CharField(choices=[('requeue', 'Requeue'), ('fail', 'Fail')], default='requeue', max_length=16),
        ),
        migrations.AddField(
            model_name='job',
            name='preemptible',
            field=models.BooleanField(default=True, help_text='False: never preempted, and never admitted above nominal quota.'),
        ),
        migrations.AddField(
            model_name='job',
            name='preemption_count',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='placement',
            name='charged',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='placement',
            name='charges',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.CreateModel(
            name='Preemption',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('victim_tenant', models.CharField(max_length=63)),
                ('preemptor_tenant', models.CharField(blank=True, max_length=63)),
                ('reason', models.CharField(max_length=32)),
                ('message', models.TextField(blank=True)),
                ('time', models.DateTimeField()),
                ('evict_by', models.DateTimeField()),
                ('outcome', models.CharField(max_length=16)),
                ('preemptor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='preempted', to='scheduling.job')),
                ('victim', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='preemptions', to='scheduling.job')),
            ],
            options={
                'ordering': ['time', 'id'],
            },
        ),
        migrations.AddIndex(
            model_name='placement',
            index=models.Index(condition=models.Q(charged=True), fields=['state'], name='placement_charged_state'),
        ),
    ]
