"""``python -m console.run`` (``make run``): the whole console on one machine.

Starts the embedded PostgreSQL and Redis unless ``DATABASE_URL`` / ``REDIS_URL`` are set,
migrates, seeds the demo and a few hours of its history (``DEMO_HISTORY_HOURS``, default
6: :mod:`telemetry.services.demo_history`), then runs gunicorn (web, ``CONSOLE_BIND``, default
127.0.0.1:8000), a Celery worker for the default queue, a Celery worker for the telemetry
queue (``CELERY_TELEMETRY_QUEUE``) and Celery beat under :mod:`console.supervisor` until
interrupted: a child that dies is logged and restarted with exponential backoff (at most
``CONSOLE_RESTART_MAX_S``, 60 s) while the others keep running; Ctrl-C stops them all (the
embedded servers keep running: ``make stop`` stops them).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import MutableMapping

from console import embedded
from console.supervisor import Backoff, Supervisor
from core.env import env_float, env_int, env_str


def _manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], check=True)  # noqa: S603 - fixed argv


def _prepare(env: MutableMapping[str, str]) -> None:
    """Point ``env`` at the embedded PostgreSQL and Redis unless URLs are set (starting them),
    then migrate, collect static files and seed the demo and its history."""
    env.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")
    if not env.get("DATABASE_URL"):
        env["DATABASE_URL"] = embedded.ensure_postgres()
    if not env.get("REDIS_URL"):
        env["REDIS_URL"] = embedded.ensure_redis()
    env.setdefault("DEMO_STREAM_S", "20")
    _manage("migrate", "--no-input", "-v", "0")
    _manage("collectstatic", "--no-input", "-v", "0")
    _manage("seed_demo")
    _manage("seed_demo_history")


def _celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "console", *args]


def _commands(bind: str, workers: str, concurrency: str) -> dict[str, list[str]]:
    """argv of the supervised children: gunicorn on ``bind`` with ``workers`` workers, the
    Celery worker of the default queue (admission cycles, submission, reconcile) with
    ``concurrency`` processes, the Celery worker of the telemetry queue
    (``CELERY_TELEMETRY_QUEUE``: samples, scrapes, rollups, gauges; its own process so cycles
    never wait behind it) and Celery beat (schedule file in the embedded data directory).

    gunicorn's control socket (``gunicornc``; gunicorn 25.1+) is in the data directory too:
    its default, ``$XDG_RUNTIME_DIR/gunicorn.ctl`` or ``~/.gunicorn/gunicorn.ctl``, is one
    path per user, which gunicorn unlinks when it starts and when it stops, so two consoles
    on one machine would take it from each other (issue 29)."""
    default_queue = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
    telemetry_queue = env_str("CELERY_TELEMETRY_QUEUE", f"{default_queue}-telemetry")
    log = ("--loglevel", "INFO")
    schedule = str(embedded.data_dir() / "celerybeat-schedule")
    return {
        "web": [
            *(sys.executable, "-m", "gunicorn", "console.wsgi", "--bind", bind),
            *("--workers", workers, "--access-logfile", "-"),
            *("--control-socket", str(embedded.socket_path("gunicorn", "gunicorn.ctl"))),
        ],
        "worker": _celery("worker", "-Q", default_queue, "--concurrency", concurrency, *log),
        "worker-telemetry": _celery(
            "worker", "-Q", telemetry_queue, "-n", "telemetry@%h", "--concurrency", "1", *log
        ),
        "beat": _celery("beat", "--schedule", schedule, *log),
    }


def main() -> int:
    env = os.environ
    bind = env_str("CONSOLE_BIND", "127.0.0.1:8000")  # a bad setting fails before anything starts
    workers = str(env_int("CONSOLE_WEB_WORKERS", 2, minimum=1))
    concurrency = str(env_int("CONSOLE_WORKER_CONCURRENCY", 2, minimum=1))
    _prepare(env)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    supervisor = Supervisor(
        _commands(bind, workers, concurrency),
        env=env,
        backoff=Backoff(max_s=env_float("CONSOLE_RESTART_MAX_S", 60.0, minimum=1.0)),
    )
    signal.signal(signal.SIGTERM, supervisor.stop)
    signal.signal(signal.SIGINT, supervisor.stop)
    print(f"\nconsole: http://{bind}/  (admin: http://{bind}/admin/, API docs: /api/docs/)")  # noqa: T201
    print("stop with Ctrl-C; `make stop` stops the embedded PostgreSQL and Redis\n")  # noqa: T201
    return supervisor.run()


if __name__ == "__main__":
    raise SystemExit(main())
