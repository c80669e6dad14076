"""docker-compose.yml: valid against the Compose Specification, and the console services set
only variables the console reads, run its real entry points and start in order.

``docker compose config`` runs too where the Compose plugin is installed; the test machines
have none, so the file is checked the way Compose checks it: variables interpolated, then
validated against the specification's JSON schema (compose-spec.json, see compose-spec.md).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from urllib.parse import urlparse

import jsonschema
import pytest
import yaml

from console import health
from tests.deploy.entrypoints import check_command
from tests.deploy.env_reads import variables_read
from tests.deploy.sources import ROOT

COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = json.loads((ROOT / "tests/deploy/compose-spec.json").read_text())
ENV = {"POSTGRES_PASSWORD": "pg-secret", "SECRET_KEY": "k" * 50}
ENTRY_POINTS = {
    "migrate": ["manage.py migrate"],
    "web": ["gunicorn console.wsgi"],
    "worker": ["celery worker"],
    "worker-telemetry": ["celery worker"],
    "beat": ["celery beat"],
}

_VARIABLE = re.compile(r"\$(?:(\$)|\{(\w+)(?:(:?[-?+])([^}]*))?\}|(\w+))")


class MissingVariable(ValueError):
    """A ``${NAME:?message}`` whose variable is unset."""


def interpolate(value, env: dict[str, str]):
    """Compose's variable interpolation ("Interpolation" in the Compose Specification):
    ``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``, ``${NAME:?error}``,
    ``${NAME?error}``, ``${NAME:+other}``, ``${NAME+other}``, and ``$$`` for ``$``."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        escaped, name, operator, argument, bare = match.groups()
        if escaped:
            return "$"
        name = name or bare
        is_set = name in env
        present = is_set and (env[name] != "" or not (operator or "").startswith(":"))
        if operator in (":-", "-"):
            return env[name] if present else argument
        if operator in (":?", "?"):
            if not present:
                raise MissingVariable(f"{name}: {argument}")
            return env[name]
        if operator in (":+", "+"):
            return argument if present else ""
        return env.get(name, "")

    return _VARIABLE.sub(substitute, value)


def compose_model(env: dict[str, str] = ENV) -> dict:
    """docker-compose.yml as Compose reads it: YAML (merge keys resolved), interpolated."""
    return interpolate(yaml.safe_load(COMPOSE.read_text()), env)


def console_services(model: dict) -> dict[str, dict]:
    """The services built from this repository."""
    return {name: s for name, s in model["services"].items() if s.get("build") == "."}


def test_valid_against_the_compose_specification() -> None:
    jsonschema.validate(compose_model(), SCHEMA)


def test_the_schema_check_catches_a_bad_key() -> None:
    model = compose_model()
    model["services"]["web"]["helthcheck"] = model["services"]["web"].pop("healthcheck")
    with pytest.raises(jsonschema.ValidationError, match="helthcheck"):
        jsonschema.validate(model, SCHEMA)


def test_secrets_must_be_given() -> None:
    for missing in ENV:
        with pytest.raises(MissingVariable, match=missing):
            compose_model({k: v for k, v in ENV.items() if k != missing})


def test_console_services_set_only_variables_the_console_reads() -> None:
    known = variables_read()
    services = console_services(compose_model())
    assert set(services) == set(ENTRY_POINTS)
    for name, service in services.items():
        env = service["environment"]
        assert set(env) <= known, f"{name}: {set(env) - known} are read by nothing"
        assert env["SECRET_KEY"] == ENV["SECRET_KEY"] and env["CONSOLE_REQUIRE_SECRET_KEY"]
        assert env["METRICS_TOKEN"] == "", name  # optional: unset = admin sessions only
    token = "t" * 32
    for service in console_services(compose_model({**ENV, "METRICS_TOKEN": token})).values():
        assert service["environment"]["METRICS_TOKEN"] == token


def test_console_services_run_the_entry_points_in_order() -> None:
    model = compose_model()
    for name, service in console_services(model).items():
        assert check_command(shlex.split(service["command"])) == ENTRY_POINTS[name], name
        expected = (
            {
                "postgres": {"condition": "service_healthy"},
                "redis": {"condition": "service_healthy"},
            }
            if name == "migrate"
            else {"migrate": {"condition": "service_completed_successfully"}}
        )
        assert service["depends_on"] == expected, name
    assert model["services"]["migrate"]["restart"] == "no"


def test_urls_point_at_the_compose_services() -> None:
    model = compose_model()
    postgres = model["services"]["postgres"]["environment"]
    for service in console_services(model).values():
        db = urlparse(service["environment"]["DATABASE_URL"])
        assert (db.hostname, db.port, db.username, db.password, db.path) == (
            "postgres",
            5432,
            postgres["POSTGRES_USER"],
            ENV["POSTGRES_PASSWORD"],
            "/" + postgres["POSTGRES_DB"],
        )
        assert urlparse(service["environment"]["REDIS_URL"]).hostname == "redis"
    for name in ("postgres", "redis"):
        assert model["services"][name]["healthcheck"]["test"][0] == "CMD"
    probe = model["services"]["web"]["healthcheck"]["test"]
    assert probe[:3] == ["CMD", "python", "-c"]
    assert f"http://127.0.0.1:8000{health.READINESS_PATH}" in probe[3]


def _compose_plugin() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run(
            [docker, "compose", "version"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        return [docker, "compose"]
    return None


@pytest.mark.skipif(
    _compose_plugin() is None,
    reason="no `docker compose` plugin here; the schema check above stands in",
)
def test_docker_compose_config_accepts_the_file() -> None:
    done = subprocess.run(
        [*_compose_plugin(), "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        check=False,
    )
    assert done.returncode == 0, done.stderr
