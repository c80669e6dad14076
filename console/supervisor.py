"""A small process supervisor for ``make run`` (:mod:`console.run`): web, worker and beat.

Each child runs in its own process group (Ctrl-C reaches only the supervisor, which then stops
the children in order). A child that exits while the console runs is logged and restarted
after an exponential backoff (``initial_s`` × ``factor``\\ :sup:`n`, at most ``max_s``); the
count ``n`` starts again once a child has stayed up ``reset_after_s``. The other children are
not touched, so a crashed worker never takes the web server down. Stopping (:class:`Stop`
set, e.g. by SIGINT/SIGTERM) sends SIGTERM to every child, waits ``grace_s`` and kills what is
left.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

logger = logging.getLogger("console.supervisor")


@dataclass(frozen=True)
class Backoff:
    """Restart delays in seconds: ``initial_s * factor**failures``, capped at ``max_s``."""

    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 60.0
    reset_after_s: float = 60.0

    def delay(self, failures: int) -> float:
        """Delay before the restart that follows ``failures`` quick exits in a row (>= 1)."""
        return min(self.max_s, self.initial_s * self.factor ** max(0, failures - 1))


@dataclass
class _Child:
    name: str
    command: Sequence[str]
    proc: subprocess.Popen | None = None
    started: float = 0.0
    failures: int = 0
    restart_at: float | None = None
    restarts: list[float] = field(default_factory=list)


class Supervisor:
    """Runs ``commands`` (``{name: argv}``) until :meth:`stop`; see the module docstring.

    Args:
        env: environment of the children (None = inherited).
        spawn: ``subprocess.Popen`` (replaceable in tests).
        clock: monotonic clock in seconds.
    """

    def __init__(
        self,
        commands: Mapping[str, Sequence[str]],
        *,
        env=None,
        backoff: Backoff = Backoff(),
        grace_s: float = 15.0,
        poll_s: float = 0.5,
        spawn: Callable[..., subprocess.Popen] = subprocess.Popen,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.children = {name: _Child(name, list(cmd)) for name, cmd in commands.items()}
        self.env, self.backoff, self.grace_s, self.poll_s = env, backoff, grace_s, poll_s
        self.spawn, self.clock = spawn, clock
        self._stop = threading.Event()

    def stop(self, *_signal_args) -> None:
        """Ask :meth:`run` to stop every child and return (safe from a signal handler)."""
        self._stop.set()

    def pid(self, name: str) -> int | None:
        proc = self.children[name].proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def _start(self, child: _Child) -> None:
        child.proc = self.spawn(child.command, env=self.env, process_group=0)
        child.started, child.restart_at = self.clock(), None
        logger.info("%s started (pid %s)", child.name, child.proc.pid)

    def _check(self, child: _Child, now: float) -> None:
        if child.restart_at is not None:
            if now >= child.restart_at:
                child.restarts.append(now)
                self._start(child)
            return
        code = child.proc.poll()
        if code is None:
            return
        ran = now - child.started
        child.failures = 1 if ran >= self.backoff.reset_after_s else child.failures + 1
        delay = self.backoff.delay(child.failures)
        child.restart_at = now + delay
        logger.warning(
            "%s (pid %s) exited with code %s after %.1fs; restarting in %.1fs (exit %d in a row)",
            child.name,
            child.proc.pid,
            code,
            ran,
            delay,
            child.failures,
        )

    def run(self) -> int:
        """Start every child, keep them running until :meth:`stop`, then stop them.

        Returns:
            0 (a child's crashes are restarted, never fatal).
        """
        for child in self.children.values():
            self._start(child)
        try:
            while not self._stop.wait(self.poll_s):
                now = self.clock()
                for child in self.children.values():
                    self._check(child, now)
        finally:
            self._shutdown()
        return 0

    def _shutdown(self) -> None:
        running = [
            c.proc for c in self.children.values() if c.proc is not None and c.proc.poll() is None
        ]
        for proc in running:
            proc.terminate()
        deadline = time.monotonic() + self.grace_s
        for proc in running:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning(
                    "pid %s did not stop within %.0fs; killing it", proc.pid, self.grace_s
                )
                proc.kill()
                proc.wait()
        logger.info("stopped %s", ", ".join(self.children))
