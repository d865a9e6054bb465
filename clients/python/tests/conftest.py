"""Real struxd replicas on the tiny random-weight model, for the client's tests.

Needs STRUX_BUILD (the folder with strux and struxd); tests/cli/test_python_client.sh
sets it.  The replicas listen on ipc sockets in a temporary folder.
"""
import os
import signal
import subprocess
import time

import pytest


class Replicas:
    def __init__(self, build, root, n):
        self.build, self.root = build, root
        self.model = os.path.join(root, "model")
        subprocess.run([os.path.join(build, "strux"), "model", "random", "--shape", "tiny",
                        "--seed", "1", "--out", self.model], check=True, capture_output=True)
        self.procs = {}
        self.addrs = [f"ipc://{root}/r{i}.ipc" for i in range(n)]
        for i in range(n):
            self.start(i)

    def start(self, i):
        log = open(os.path.join(self.root, f"r{i}.log"), "a")
        p = subprocess.Popen([os.path.join(self.build, "struxd"), "--model", self.model,
                              "--threads", "1", "--listen", self.addrs[i],
                              "--default-max-tokens", "48"], stderr=subprocess.PIPE)
        for line in p.stderr:
            log.write(line.decode())
            if line.startswith(b"struxd: ready"):
                break
        else:
            raise RuntimeError(f"struxd {i} did not start")
        # the rest of its log goes to the file, read by a helper thread-free pipe
        subprocess.Popen(["cat"], stdin=p.stderr, stdout=log)
        self.procs[i] = p

    def kill(self, i, sig=signal.SIGKILL):
        self.procs[i].send_signal(sig)
        return self.procs[i].wait(timeout=60)

    def restart(self, i):
        self.kill(i)
        time.sleep(0.2)
        self.start(i)

    def close(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture(scope="session")
def replicas(tmp_path_factory):
    build = os.environ.get("STRUX_BUILD")
    if not build:
        pytest.skip("STRUX_BUILD is not set")
    r = Replicas(build, str(tmp_path_factory.mktemp("strux")), 2)
    yield r
    r.close()
