"""``envsim serve`` stops the server it started on SIGINT even when SIGINT was inherited as ignored (a
background job of a non-interactive shell), and on SIGTERM: no server is left running after it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

FAKE_TRANSFORMERS = '''#!{python}
"""A stand-in for ``transformers serve MODEL --host H --port P ...``: answers every POST with one choice."""
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
open(os.environ["FAKE_SERVER_PID_FILE"], "w").write(str(os.getpid()))


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({{"choices": [{{"message": {{"role": "assistant", "content": "x"}}}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


def alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (and is not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_serve_stops_its_server_on_sigint_inherited_ignored_and_on_sigterm(tmp_path, stop_signal):
    launcher = tmp_path / "transformers"
    launcher.write_text(FAKE_TRANSFORMERS.format(python=sys.executable))
    launcher.chmod(0o755)
    pid_file = tmp_path / "server.pid"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
           f"{os.environ.get('PATH', '')}", "FAKE_SERVER_PID_FILE": str(pid_file)}
    serve = subprocess.Popen([str(Path(sys.executable).parent / "envsim"), "serve", "--model", "m", "--backend",
                              "transformers", "--port", str(port), "--ready-timeout", "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    server_pid = None
    try:
        first = serve.stdout.readline()
        assert first.startswith(f"serving m at http://127.0.0.1:{port}/v1"), first + serve.stdout.read()
        server_pid = int(pid_file.read_text())
        assert alive(server_pid)
        serve.send_signal(stop_signal)
        code = serve.wait(60)
        output = serve.stdout.read()
        assert code == 0 and "stopping server" in output, output
        deadline = time.monotonic() + 10
        while alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(server_pid)
    finally:  # whatever failed, leave nothing running
        if serve.poll() is None:
            serve.kill()
        if server_pid is not None and alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
