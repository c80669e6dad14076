"""``python -m console.run`` (``make run``): the whole console on one machine.

Starts the embedded PostgreSQL and Redis unless ``DATABASE_URL`` / ``REDIS_URL`` are set,
migrates, seeds the demo, then runs gunicorn (web, ``CONSOLE_BIND``, default
127.0.0.1:8000), a Celery worker and Celery beat until interrupted (Ctrl-C stops all three;
the embedded servers keep running: ``make stop`` stops them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from console import embedded
from core.env import env_int, env_str


def _manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], check=True)  # noqa: S603 - fixed argv


def main() -> int:
    env = os.environ
    env.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")
    if not env.get("DATABASE_URL"):
        env["DATABASE_URL"] = embedded.ensure_postgres()
    if not env.get("REDIS_URL"):
        env["REDIS_URL"] = embedded.ensure_redis()
    env.setdefault("DEMO_STREAM_S", "20")
    bind = env_str("CONSOLE_BIND", "127.0.0.1:8000")
    workers = str(env_int("CONSOLE_WEB_WORKERS", 2, minimum=1))
    concurrency = str(env_int("CONSOLE_WORKER_CONCURRENCY", 2, minimum=1))
    _manage("migrate", "--no-input", "-v", "0")
    _manage("collectstatic", "--no-input", "-v", "0")
    _manage("seed_demo")
    beat_schedule = embedded.data_dir() / "celerybeat-schedule"
    commands = {
        "web": [sys.executable, "-m", "gunicorn", "console.wsgi", "--bind", bind,
                "--workers", workers, "--access-logfile", "-"],
        "worker": [sys.executable, "-m", "celery", "-A", "console", "worker",
                   "--concurrency", concurrency, "--loglevel", "INFO"],
        "beat": [sys.executable, "-m", "celery", "-A", "console", "beat",
                 "--schedule", str(beat_schedule), "--loglevel", "INFO"],
    }
    procs = {name: subprocess.Popen(cmd, env=env)  # noqa: S603 - the fixed argv above
             for name, cmd in commands.items()}
    print(f"\nconsole: http://{bind}/  (admin: http://{bind}/admin/, API docs: /api/docs/)")  # noqa: T201
    print("stop with Ctrl-C; `make stop` stops the embedded PostgreSQL and Redis\n")  # noqa: T201

    def shutdown(*_):
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    try:
        while all(p.poll() is None for p in procs.values()):
            time.sleep(0.5)
    finally:
        shutdown()
        for proc in procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    failed = {n: p.returncode for n, p in procs.items() if p.returncode not in (0, -15, None)}
    if failed:
        print(f"console: stopped because {failed} exited", file=sys.stderr)  # noqa: T201
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
