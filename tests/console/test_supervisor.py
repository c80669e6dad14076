"""``make run`` supervises its processes (issue 15): a killed worker or beat is restarted
with capped exponential backoff and logged, the web server keeps running, and stopping ends
every child. The children here are small Python processes, no Django needed."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

import pytest

from console.supervisor import Backoff, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]
CRASHER = [sys.executable, "-c", "import sys; sys.exit(3)"]
FAST = Backoff(initial_s=0.1, factor=2.0, max_s=0.4, reset_after_s=30.0)


def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def running():
    """Start a supervisor in a thread; stop it (and check it returned) afterwards."""
    started = []

    def start(commands, **kwargs):
        supervisor = Supervisor(commands, poll_s=0.02, grace_s=5.0, **kwargs)
        thread = threading.Thread(target=lambda: started.append(supervisor.run()))
        thread.start()
        assert _wait_for(lambda: all(supervisor.pid(n) for n in commands if n != "crasher"))
        return supervisor, thread

    return start


def test_backoff_doubles_and_is_capped():
    assert [FAST.delay(n) for n in range(1, 6)] == [0.1, 0.2, 0.4, 0.4, 0.4]
    assert Backoff().delay(1) == 1.0 and Backoff().delay(20) == 60.0


def test_a_killed_worker_is_restarted_and_the_web_server_keeps_running(running, caplog):
    commands = {"web": SLEEPER, "worker": SLEEPER, "beat": SLEEPER}
    with caplog.at_level(logging.INFO, logger="console.supervisor"):
        supervisor, thread = running(commands, backoff=FAST)
        web, worker, beat = (supervisor.pid(n) for n in commands)
        os.kill(worker, signal.SIGKILL)
        assert _wait_for(lambda: supervisor.pid("worker") not in (None, worker))
        assert supervisor.pid("web") == web and supervisor.pid("beat") == beat
        os.kill(beat, signal.SIGKILL)
        assert _wait_for(lambda: supervisor.pid("beat") not in (None, beat))
        assert supervisor.pid("web") == web
        new_worker = supervisor.pid("worker")
        supervisor.stop()
        thread.join(10)
    assert not thread.is_alive()
    assert f"worker (pid {worker}) exited with code -9" in caplog.text
    assert "restarting in 0.1s" in caplog.text
    for pid in (web, new_worker):  # stopped: no child is left behind
        assert _wait_for(lambda pid=pid: not _alive(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie not yet reaped by its parent counts as gone
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


def test_a_crash_looping_child_backs_off_up_to_the_cap(running, caplog):
    with caplog.at_level(logging.WARNING, logger="console.supervisor"):
        supervisor, thread = running({"web": SLEEPER, "crasher": CRASHER}, backoff=FAST)
        web = supervisor.pid("web")
        assert _wait_for(lambda: len(supervisor.children["crasher"].restarts) >= 4)
        supervisor.stop()
        thread.join(10)
    delays = [
        line.split("restarting in ")[1].split("s")[0]
        for line in caplog.text.splitlines()
        if "crasher" in line and "restarting" in line
    ]
    assert delays[:4] == ["0.1", "0.2", "0.4", "0.4"]
    restarts = supervisor.children["crasher"].restarts
    gaps = [b - a for a, b in zip(restarts, restarts[1:], strict=False)]
    assert all(gap >= 0.35 for gap in gaps[1:]), gaps  # never faster than the cap allows
    assert not _alive(web)


def test_stop_by_signal_ends_every_child(tmp_path):
    """``python -m console.run`` installs ``Supervisor.stop`` for SIGINT/SIGTERM; here the
    same handler is driven by a real SIGINT (Ctrl-C) to a supervising child process."""
    script = tmp_path / "sup.py"
    script.write_text(
        "import signal, sys\n"
        "from console.supervisor import Supervisor\n"
        f"s = Supervisor({{'web': {SLEEPER!r}, 'worker': {SLEEPER!r}}}, poll_s=0.02)\n"
        "signal.signal(signal.SIGTERM, s.stop)\n"
        "signal.signal(signal.SIGINT, s.stop)\n"
        "sys.exit(s.run())\n"
    )
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=os.getcwd(),
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert _wait_for(lambda: len(_children(proc.pid)) == 2)
    kids = _children(proc.pid)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0
    assert all(_wait_for(lambda pid=pid: not _alive(pid)) for pid in kids)


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().split(")")[-1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out
