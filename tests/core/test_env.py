"""Strict settings: a bad value stops start-up with a message naming the variable."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from core.env import env_bool, env_choice, env_int, env_ints, env_list, env_rate, env_url

ROOT = Path(__file__).resolve().parents[2]


def test_env_bool_accepts_the_usual_spellings(monkeypatch):
    monkeypatch.setenv("X_FLAG", "Yes")
    assert env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "off")
    assert env_bool("X_FLAG", True) is False
    monkeypatch.delenv("X_FLAG")
    assert env_bool("X_FLAG", True) is True


def test_env_bool_rejects_anything_else(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG='maybe' is not a boolean"):
        env_bool("X_FLAG", False)


def test_env_int_checks_type_and_minimum(monkeypatch):
    monkeypatch.setenv("X_N", "12")
    assert env_int("X_N", 1, minimum=1) == 12
    monkeypatch.setenv("X_N", "twelve")
    with pytest.raises(ImproperlyConfigured, match="X_N='twelve' is not an integer"):
        env_int("X_N", 1)
    monkeypatch.setenv("X_N", "0")
    with pytest.raises(ImproperlyConfigured, match="X_N=0 must be at least 1"):
        env_int("X_N", 1, minimum=1)


def test_env_ints_checks_count_type_and_minimum(monkeypatch):
    monkeypatch.delenv("X_GC", raising=False)
    assert env_ints("X_GC", (50_000, 20, 100)) == (50_000, 20, 100)
    monkeypatch.setenv("X_GC", " 700,10,10")
    assert env_ints("X_GC", (1, 2, 3)) == (700, 10, 10)
    for bad, words in (
        ("700,10", "needs 3 integers"),
        ("700,ten,10", "is not comma-separated integers"),
        ("700,-1,10", "every value must be at least 0"),
    ):
        monkeypatch.setenv("X_GC", bad)
        with pytest.raises(ImproperlyConfigured, match=words):
            env_ints("X_GC", (1, 2, 3))


def test_env_rate_takes_a_drf_rate_or_stops(monkeypatch):
    monkeypatch.delenv("X_RATE", raising=False)
    assert env_rate("X_RATE", "120/min") == "120/min"
    for good in ("5/s", "1000/hour", "30/day", "7/minute"):
        monkeypatch.setenv("X_RATE", good)
        assert env_rate("X_RATE", "1/s") == good
    for bad, words in (
        ("120", "is not a rate"),
        ("120/mango", "is not a rate"),
        ("-1/min", "is not a rate"),
        ("0/min", "the count must be at least 1"),
    ):
        monkeypatch.setenv("X_RATE", bad)
        with pytest.raises(ImproperlyConfigured, match=words):
            env_rate("X_RATE", "1/s")


def test_tune_gc_applies_the_thresholds_and_freezes(settings):
    import gc

    from core.gc_tuning import tune_gc

    before = gc.get_threshold()
    settings.PYTHON_GC_THRESHOLDS = (40_000, 15, 90)
    try:
        assert tune_gc() == (40_000, 15, 90) == gc.get_threshold()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_env_list_and_url(monkeypatch):
    monkeypatch.setenv("X_HOSTS", "a.example, ,b.example")
    assert env_list("X_HOSTS", []) == ["a.example", "b.example"]
    monkeypatch.setenv("X_DB", "mysql://db/x")
    with pytest.raises(ImproperlyConfigured, match="X_DB must start with one of postgres"):
        env_url("X_DB", ("postgres", "postgresql"))
    monkeypatch.setenv("X_DB", "postgresql://u@db:5432/console")
    assert env_url("X_DB", ("postgres", "postgresql")) == "postgresql://u@db:5432/console"


def test_env_choice_takes_one_of_the_choices_as_written(monkeypatch):
    levels = ("privileged", "baseline", "restricted")
    monkeypatch.delenv("X_LEVEL", raising=False)
    assert env_choice("X_LEVEL", "baseline", levels) == "baseline"
    monkeypatch.setenv("X_LEVEL", " restricted ")
    assert env_choice("X_LEVEL", "baseline", levels) == "restricted"
    monkeypatch.setenv("X_LEVEL", "Restricted")
    with pytest.raises(
        ImproperlyConfigured, match="X_LEVEL='Restricted': use privileged, baseline or restricted"
    ):
        env_choice("X_LEVEL", "baseline", levels)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean"),
        ("DATABASE_URL", "sqlite:///x.db", "DATABASE_URL must start with one of postgres"),
        ("ADMISSION_TICK_S", "0", "ADMISSION_TICK_S=0 must be at least 1"),
        (
            "TENANT_POD_SECURITY_LEVEL",
            "strict",
            "TENANT_POD_SECURITY_LEVEL='strict': use privileged, baseline or restricted",
        ),
        ("DEVICE_DRAIN_POLICY", "drop", "DEVICE_DRAIN_POLICY='drop': use wait, requeue or fail"),
    ],
)
def test_bad_value_stops_start_up(name, value, message):
    env = {**os.environ, name: value, "DJANGO_SETTINGS_MODULE": "console.settings.base"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert message in result.stderr
