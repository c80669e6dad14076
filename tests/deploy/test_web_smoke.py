"""The base's web container, run here: its command with the ConfigMap's settings (and the
Secret's keys pointed at the test PostgreSQL and Redis) starts gunicorn and answers the
kubelet's probes, and the Service's host names reach the login."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.deploy.manifests import WORKLOADS, find, one
from tests.deploy.sources import ROOT

POD_HOST = "10.244.1.7:8000"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, host: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Host": host})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_web_container_command_serves_the_probes(rendered, settings, tmp_path: Path) -> None:
    objects = rendered["deploy/base"]
    (config,) = find(objects, "ConfigMap")
    web = one(objects, "Deployment", WORKLOADS["web"])["spec"]["template"]["spec"]
    command = list(web["containers"][0]["command"])
    port = _free_port()
    command = [f"--bind=127.0.0.1:{port}" if arg.startswith("--bind") else arg for arg in command]
    command[0] = str(Path(sys.executable).parent / command[0])
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "DJANGO_SETTINGS_MODULE": "console.settings.base",
        **config["data"],
        "DATABASE_URL": settings.DATABASE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": "smoke-" + "k" * 50,
    }
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            try:
                status, _ = _get(base + "/healthz", POD_HOST)
                break
            except OSError:
                assert time.monotonic() < deadline, "gunicorn did not answer within 60 s"
                time.sleep(0.5)
        assert status == 200
        status, body = _get(base + "/readyz", POD_HOST)
        assert (status, json.loads(body)["checks"]) == (200, {"database": "ok", "redis": "ok"})
        assert _get(base + "/", POD_HOST)[0] == 400  # ALLOWED_HOSTS from the ConfigMap
        assert _get(base + "/", "llmops-console-web.llmops-console.svc")[0] == 302  # login
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()
