"""A real Label Studio server for the round-trip tests: started once per test session, shared by the xdist
workers, stopped by its process id.

Label Studio lives in its own virtual environment, ``.venv/labelstudio`` (``make test`` builds it from
requirements-labelstudio.txt: its pins fight FiftyOne's, so it is not in ``.venv``). Its first start migrates
a new database (40–85 s); the make target also migrates a template data folder once
(``.venv/labelstudio/template``, made by ``python tests/labelstudio_server.py --make-template DIR``), which
each session copies, so the server starts in a few seconds.

Sharing (the pytest-xdist pattern for session data): the first worker that needs the server starts it under
a file lock and writes its address and process id into a state file in the directory shared by the workers of
the run (the parent of each worker's base temp dir); the others read it. Each worker counts itself in and
out; the last one out stops the server (SIGTERM to its process group, then SIGKILL).

The server listens on 127.0.0.1 on a free port, with a test user and a legacy API token
(``--enable-legacy-api-token``: FiftyOne 1.22's backend sends ``Authorization: Token ...``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv" / "labelstudio"
EXECUTABLE = VENV / "bin" / "label-studio"
TEMPLATE = VENV / "template"
USER = "iaa-tests@example.com"
PASSWORD = "iaa-tests-password"
TOKEN = "iaa0tests0legacy0token0123456789abcdef0"
#: seconds to wait for /health: a start on a copy of the template takes ~3-10 s, a first start 40-85 s
START_TIMEOUT = 240.0


@dataclass
class Server:
    """A running server: its URL, legacy API token, process id (a process group of its own) and data folder."""

    url: str
    token: str
    pid: int
    data_dir: str


def missing() -> str | None:
    """Why the server cannot be started here (``None``: it can)."""
    if not EXECUTABLE.exists():
        return (f"Label Studio is not installed in {VENV.relative_to(REPO)} (make .venv/.labelstudio, which "
                "make test runs, installs it from requirements-labelstudio.txt)")
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:  # noqa: S310 - a local test server
            return r.status == 200
    except OSError:
        return False


def start(data_dir: Path, *, timeout: float = START_TIMEOUT) -> Server:
    """Starts ``label-studio start`` on ``data_dir`` (a copy of the template when there is one and the folder
    does not exist) and waits for ``/health``.

    Raises:
        RuntimeError: the server exited or did not answer in ``timeout`` seconds (its log's tail in the message).
    """
    if not data_dir.exists() and TEMPLATE.exists():
        shutil.copytree(TEMPLATE, data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = data_dir / "server.log"
    env = {**os.environ, "LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false"}
    env.pop("LABEL_STUDIO_BASE_DATA_DIR", None)
    cmd = [str(EXECUTABLE), "start", "--no-browser", "--internal-host", "127.0.0.1", "-p", str(port),
           "--data-dir", str(data_dir), "--username", USER, "--password", PASSWORD, "--user-token", TOKEN,
           "--enable-legacy-api-token", "--log-level", "WARNING"]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _healthy(url):
            return Server(url=url, token=TOKEN, pid=proc.pid, data_dir=str(data_dir))
        time.sleep(0.25)
    stop(proc.pid)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(f"Label Studio did not answer on {url}/health within {timeout:.0f} s "
                       f"(exit code {proc.poll()}); its log ends:\n{tail}")


def stop(pid: int, *, grace: float = 10.0) -> None:
    """Stops the server started as process ``pid`` (leader of its own process group): SIGTERM, then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (another worker started it): poll its existence
            done = 0 if _alive(pid) else pid
        if done:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def shared_server(root: Path) -> Iterator[Server]:
    """Yields the server of the test run whose shared folder is ``root`` (started by the first worker that
    asks, stopped by the last one to leave)."""
    root.mkdir(parents=True, exist_ok=True)
    lock, state_file = root / "labelstudio.lock", root / "labelstudio.json"
    with _locked(lock):
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if state is None or not _alive(state["server"]["pid"]) or not _healthy(state["server"]["url"]):
            server = start(root / f"labelstudio-data-{os.getpid()}")
            state = {"server": asdict(server), "users": 0}
        state["users"] += 1
        state_file.write_text(json.dumps(state))
    try:
        yield Server(**state["server"])
    finally:
        with _locked(lock):
            state = json.loads(state_file.read_text())
            state["users"] -= 1
            if state["users"] <= 0:
                stop(state["server"]["pid"])
                state_file.unlink()
            else:
                state_file.write_text(json.dumps(state))


def make_template(path: Path) -> float:
    """Migrates a new data folder at ``path`` (a first start, then stop) for the tests to copy; returns the
    seconds the first start took."""
    if path.exists():
        shutil.rmtree(path)
    t0 = time.monotonic()
    server = start(path)
    took = time.monotonic() - t0
    stop(server.pid)
    (path / "server.log").unlink(missing_ok=True)
    return took


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-template", type=Path, required=True, help="the data folder to migrate")
    args = parser.parse_args()
    why = missing()
    if why:
        sys.exit(why)
    print(f"Label Studio template migrated in {make_template(args.make_template):.0f} s: {args.make_template}")
