"""``make stop`` finds this checkout's embedded servers whatever ``CONSOLE_DATA_DIR`` says
now, says where others run and exits 1 when none of its own did; ``make clean`` removes the
folder ``CONSOLE_DATA_DIR`` names (issue 30). Real servers in temporary folders; the
checkout is a stand-in folder, so the test session's own servers are never touched."""

import shutil
import tempfile
from pathlib import Path

import pytest

from console import embedded


@pytest.fixture
def folders():
    """Temporary folders readable by PostgreSQL's own user (the tests may run as root, and
    pytest's tmp_path is private to root); their servers are stopped and they are removed
    afterwards."""
    made: list[Path] = []

    def make(name: str) -> Path:
        path = Path(tempfile.mkdtemp(prefix=f"console-stop-{name}-"))
        path.chmod(0o755)
        made.append(path)
        return path

    yield make
    for path in made:
        if path.exists():
            embedded.stop(path)
            shutil.rmtree(path, ignore_errors=True)


def _started_by(base: Path, checkout: Path) -> None:
    (base / embedded.OWNER_FILE).write_text(f"{checkout}\n")


def test_stop_finds_the_servers_of_this_checkout_in_another_data_dir(folders):
    checkout = folders("checkout")
    elsewhere = folders("data")  # as if started with CONSOLE_DATA_DIR=<elsewhere>
    embedded.ensure_postgres(elsewhere)
    embedded.ensure_redis(elsewhere)
    assert (elsewhere / embedded.OWNER_FILE).read_text().strip() == str(embedded.CHECKOUT)
    _started_by(elsewhere, checkout)
    assert elsewhere in embedded.running_data_dirs()

    # `make stop` without CONSOLE_DATA_DIR: the default folder of the checkout
    status, lines = embedded.stop_checkout(checkout / ".console", checkout)

    assert status == 0
    assert lines == [f"stopped the embedded PostgreSQL and Redis in {elsewhere}"]
    assert elsewhere not in embedded.running_data_dirs()
    assert not (elsewhere / "pg" / "postmaster.pid").exists()


def test_stop_names_the_servers_of_other_checkouts_and_fails(folders):
    checkout = folders("checkout")
    other = folders("other")
    embedded.ensure_redis(other)
    _started_by(other, Path("/srv/another-checkout"))

    status, lines = embedded.stop_checkout(checkout / ".console", checkout)

    assert status == 1
    assert lines[0] == f"no embedded server of this checkout ({checkout}) runs; others run in:"
    assert (
        f"  {other} (started from /srv/another-checkout): "
        f"stop them with CONSOLE_DATA_DIR={other} make stop"
    ) in lines
    assert other in embedded.running_data_dirs()  # not ours: left running


def test_clean_stops_and_removes_the_configured_folder_only(folders):
    checkout = folders("checkout")
    data = folders("data")
    earlier = folders("earlier")  # this checkout's servers, started with another folder
    for base in (data, earlier):
        embedded.ensure_redis(base)
        _started_by(base, checkout)

    status, lines = embedded.clean(data, checkout)

    assert status == 0
    assert sorted(lines[:2]) == sorted(
        f"stopped the embedded PostgreSQL and Redis in {d}" for d in (data, earlier)
    )
    assert lines[2:] == [
        f"kept {earlier} (CONSOLE_DATA_DIR={earlier} make clean removes it)",
        f"removed {data}",
    ]
    assert not data.exists() and data not in embedded.running_data_dirs()
    assert earlier.exists() and earlier not in embedded.running_data_dirs()

    stranger = folders("stranger")  # CONSOLE_DATA_DIR pointing at a folder of other files
    (stranger / "notes.txt").write_text("keep me")
    status, lines = embedded.clean(stranger, checkout)
    assert status == 1
    assert lines[-1].endswith("holds no console data (no embedded.lock): not removed")
    assert (stranger / "notes.txt").read_text() == "keep me"
