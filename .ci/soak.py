"""Soak: run the concurrency and fault suites again and again, each run on a fresh embedded
PostgreSQL and Redis, and print how many runs passed (``make soak``; not part of
``make test``).

Usage: ``python .ci/soak.py [--runs N] [pytest args...]``; ``SOAK_RUNS`` (default 20) sets N
and ``SOAK_TESTS`` the test paths (default the concurrency test and the fault suite).

Each run gets its own ``CONSOLE_DATA_DIR`` in a temporary folder, so the embedded servers
start from an empty data directory (``console.embedded``), and is stopped and removed after
it. With ``DATABASE_URL`` set the runs share that server instead (said in the output). For
each run the script prints the result, the time, pytest-randomly's seed and the deadlocks
PostgreSQL logged; the last line is ``soak: N passed, N failed``. Exit status 1 when any run
failed, its log kept and named.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TESTS = "tests/scheduling/test_concurrency.py tests/faults"


def _runs_default() -> int:
    raw = os.environ.get("SOAK_RUNS", "20")
    try:
        runs = int(raw)
    except ValueError:
        sys.exit(f"SOAK_RUNS must be a positive whole number, not {raw!r}")
    if runs < 1:
        sys.exit(f"SOAK_RUNS must be a positive whole number, not {raw!r}")
    return runs


def _one_run(index: int, tests: list[str], extra: list[str]) -> tuple[bool, str]:
    """Run pytest once on a fresh data folder; returns (passed, one-line summary)."""
    data = Path(tempfile.mkdtemp(prefix=f"console-soak-{index}-"))
    env = {**os.environ, "CONSOLE_DATA_DIR": str(data)}
    log = data / "pytest.log"
    seed = random.SystemRandom().randrange(2**32)  # printed, so a failed order can be replayed
    started = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.call(  # noqa: S603 - this interpreter, the developer's own arguments
            [sys.executable, "-m", "pytest", "-q", f"--randomly-seed={seed}", *tests, *extra],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    elapsed = time.monotonic() - started
    text = log.read_text(errors="replace")
    pg_log = data / "pg" / "log"
    deadlocks = (
        pg_log.read_text(errors="replace").count("deadlock detected") if pg_log.exists() else 0
    )
    tail = [line for line in text.splitlines() if line.strip()][-1:] or ["(no output)"]
    subprocess.call(  # noqa: S603 - this interpreter, a fixed module
        [sys.executable, "-m", "console.embedded", "stop"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    passed = rc == 0 and deadlocks == 0
    summary = (
        f"run {index}: {'pass' if passed else 'FAIL'} in {elapsed:.0f} s, seed {seed}, "
        f"deadlocks {deadlocks}: {tail[0]}"
    )
    if passed:
        shutil.rmtree(data, ignore_errors=True)
    else:
        kept = Path(tempfile.gettempdir()) / f"console-soak-failed-{index}.log"
        shutil.copy(log, kept)
        shutil.rmtree(data, ignore_errors=True)
        summary += f" (log: {kept})"
    return passed, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="runs (default SOAK_RUNS, 20)")
    args, extra = parser.parse_known_args()
    runs = args.runs or _runs_default()
    tests = (os.environ.get("SOAK_TESTS") or DEFAULT_TESTS).split()
    if os.environ.get("DATABASE_URL"):
        print("soak: DATABASE_URL is set, every run uses that server (no fresh embedded one)")
    passed = failed = 0
    for index in range(1, runs + 1):
        ok, summary = _one_run(index, tests, extra)
        print(summary, flush=True)
        passed, failed = passed + ok, failed + (not ok)
    print(f"soak: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
