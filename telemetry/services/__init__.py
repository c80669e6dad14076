"""Writes of the telemetry app, one module per concern.

- :mod:`~telemetry.services.scraping`: fetch a target and record the outcome on it.
- :mod:`~telemetry.services.ingestion`: parse, attribute and store one payload.
- :mod:`~telemetry.services.device_health`: health state, events, ``Device.healthy`` verdicts.
- :mod:`~telemetry.services.rollups`: 1-minute / 1-hour rollups and retention.
- :mod:`~telemetry.services.synthetic`: synthetic samples for the pods of simulated clusters.
- :mod:`~telemetry.services.gauges`: group gauges and capacity alerts.
- :mod:`~telemetry.services.trends`: the console's trend rollups (5-minute / 1-hour).
- :mod:`~telemetry.services.idle_jobs`: idle-job flags.
- :mod:`~telemetry.services.prices`: device prices.

Every function takes ``now`` (defaults to the current time) so tests can drive time.
"""
