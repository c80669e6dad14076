"""The console's pieces for the end-to-end benchmark: embedded PostgreSQL and Redis in their own
data folder, a fresh database, and the web (gunicorn), one Celery worker of the default queue
(cycles, submission, reconcile), one of the telemetry queue and beat as child processes whose
logs are kept (and searched for deadlocks afterwards).

The servers are the embedded ones of :mod:`console.embedded` (same code as ``make run``), in
``CONSOLE_DATA_DIR`` (the benchmark's default ``.console-bench``, never the user's console
data). The database ``bench_e2e`` is dropped and created on every start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from console import embedded

DATABASE = "bench_e2e"
ROOT = Path(__file__).resolve().parent.parent.parent


def settings_queue(name: str) -> str:
    """A Celery queue name as the settings compute it (environment, else the default)."""
    default = os.environ.get("CELERY_TASK_DEFAULT_QUEUE") or "celery"
    if name == "CELERY_TASK_DEFAULT_QUEUE":
        return default
    return os.environ.get("CELERY_TELEMETRY_QUEUE") or f"{default}-telemetry"


@dataclass
class Stack:
    """Child processes and where their logs go.

    Attributes:
        env: the environment every piece runs with (``DATABASE_URL``, ``REDIS_URL``...).
        logs: folder of ``web.log``, ``worker.log``, ``beat.log``.
        bind: ``host:port`` of the web.
        procs: running children by name.
    """

    env: dict[str, str]
    logs: Path
    bind: str
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://{self.bind}"

    def manage(self, *args: str) -> None:
        """Run ``manage.py`` with the stack's environment (raises on failure)."""
        subprocess.run([sys.executable, "manage.py", *args], check=True, cwd=ROOT, env=self.env)

    def start(self, *pieces: str, worker_concurrency: int = 1) -> None:
        """Start ``pieces`` (``web``, ``worker``, ``worker-telemetry``, ``beat``) that are not
        running yet."""
        celery = (sys.executable, "-m", "celery", "-A", "console")
        quiet = ("--loglevel", "INFO", "--without-gossip", "--without-mingle")
        commands = {
            "web": [
                *(sys.executable, "-m", "gunicorn", "console.wsgi", "--bind", self.bind),
                *("--workers", "2", "--threads", "4", "--keep-alive", "75"),
                *("--log-level", "warning"),
            ],
            "worker": [
                *(*celery, "worker", "--concurrency", str(worker_concurrency), *quiet),
                *("-Q", settings_queue("CELERY_TASK_DEFAULT_QUEUE")),
            ],
            # telemetry (samples, rollups, gauges) in its own process, as in every install
            "worker-telemetry": [
                *(*celery, "worker", "--concurrency", "1", *quiet, "-n", "telemetry@%h"),
                *("-Q", settings_queue("CELERY_TELEMETRY_QUEUE")),
            ],
            "beat": [
                *(*celery, "beat", "--schedule", str(self.logs / "celerybeat-schedule")),
                *("--loglevel", "WARNING"),
            ],
        }
        for name in pieces:
            if name in self.procs and self.procs[name].poll() is None:
                continue
            log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 (lives with the child)
            self.procs[name] = subprocess.Popen(
                commands[name], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )

    def stop(self, *pieces: str) -> None:
        """Stop ``pieces`` (all when none named) and wait for them."""
        for name in pieces or tuple(self.procs):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def wait_web(self, timeout_s: float = 60.0) -> None:
        """Wait until the web answers ``/health/live``-style requests (any HTTP answer)."""
        import requests

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                requests.get(self.base_url + "/api/", timeout=2)
                return
            except requests.RequestException:
                time.sleep(0.3)
        raise RuntimeError(f"the web did not answer on {self.bind} within {timeout_s:.0f}s")

    def log_hits(self, needle: str) -> dict[str, int]:
        """Lines containing ``needle`` (case-insensitive) per log file."""
        out = {}
        for path in sorted(self.logs.glob("*.log")):
            text = path.read_text(errors="replace").lower()
            out[path.stem] = text.count(needle.lower())
        return out


def fresh_stack(data_dir: Path, bind: str) -> Stack:
    """Start the embedded servers in ``data_dir``, create an empty ``bench_e2e`` database,
    point this process's environment at it and return the (not yet started) stack."""
    data_dir.mkdir(parents=True, exist_ok=True)
    os.environ["CONSOLE_DATA_DIR"] = str(data_dir)
    url = embedded.ensure_postgres(data_dir)
    redis_url = embedded.ensure_redis(data_dir)
    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (DATABASE,)
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}"')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    db_url = urlunsplit(parts._replace(path=f"/{DATABASE}"))
    import redis

    redis.Redis.from_url(redis_url).flushall()  # the benchmark's own Redis: no stale tasks
    logs = data_dir / "logs"
    logs.mkdir(exist_ok=True)
    for old in logs.glob("*.log"):
        old.unlink()
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "console.settings.base",
            "DATABASE_URL": db_url,
            "REDIS_URL": redis_url,
            "DEMO_STREAM_S": "0",
            "API_WRITE_RATE": "100000000/min",
            "API_BATCH_JOB_RATE": "100000000/min",
        }
    )
    os.environ.update(env)
    return Stack(env=env, logs=logs, bind=bind)
