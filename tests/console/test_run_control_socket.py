"""Issue 29: two consoles on one machine (``make run`` with different ``CONSOLE_DATA_DIR``)
must not share gunicorn's control socket. Gunicorn (25.1+) opens one for ``gunicornc`` at
``$XDG_RUNTIME_DIR/gunicorn.ctl`` or ``~/.gunicorn/gunicorn.ctl`` unless told otherwise, and
unlinks whatever is at that path when it starts and when it stops: the second console took
the first's socket over, and stopping either removed the other's. Each console's gunicorn
now has its own socket in its data folder. Real gunicorn processes, started from the argv
``console.run`` supervises; no database is needed (workers are not asked anything)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from gunicorn.ctl.client import ControlClient, ControlClientError

from console import run
from tests.waits import until


def _arbiter_pid(socket: str) -> int | None:
    """The pid of the gunicorn master answering on ``socket`` (None: nothing answers)."""
    client = ControlClient(socket, timeout=5.0)
    try:
        return client.send_command("show stats")["pid"]
    except (ControlClientError, OSError):
        return None
    finally:
        client.close()


@pytest.fixture
def consoles(tmp_path, monkeypatch):
    """Start the web process of two consoles (data folders ``a`` and ``b``, one user and one
    home); yield ``{name: (process, control socket)}``; stop them."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "DATABASE_URL": "postgres://unused@127.0.0.1:1/unused",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "SECRET_KEY": "control-socket-test-only",
        "DJANGO_SETTINGS_MODULE": "console.settings.base",
    }
    env.pop("XDG_RUNTIME_DIR", None)
    started: dict[str, tuple[subprocess.Popen, str]] = {}
    try:
        for name in ("a", "b"):
            data = tmp_path / name
            monkeypatch.setenv("CONSOLE_DATA_DIR", str(data))
            argv = run._commands("127.0.0.1:0", "1", "1")["web"]
            socket = argv[argv.index("--control-socket") + 1]
            assert Path(socket).is_relative_to(data), socket
            proc = subprocess.Popen(  # noqa: S603 - the console's own argv
                argv,
                env={**env, "CONSOLE_DATA_DIR": str(data)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started[name] = (proc, socket)
        yield started
    finally:
        for proc, _ in started.values():
            proc.terminate()
        for proc, _ in started.values():
            proc.wait(30)


def test_two_consoles_keep_their_own_gunicorn_control_socket(consoles):
    (proc_a, socket_a), (proc_b, socket_b) = consoles["a"], consoles["b"]
    assert socket_a != socket_b
    until(lambda: _arbiter_pid(socket_a) == proc_a.pid, "console a's control socket")
    until(lambda: _arbiter_pid(socket_b) == proc_b.pid, "console b's control socket")
    assert _arbiter_pid(socket_a) == proc_a.pid  # b's start did not take a's over
    proc_a.terminate()
    assert proc_a.wait(30) == 0
    assert not Path(socket_a).exists()
    assert _arbiter_pid(socket_b) == proc_b.pid  # a's stop left b's socket alone
