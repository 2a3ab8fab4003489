"""The machinery of ``benchmarks/cnn.py``'s sittings: worker processes and busy processes.

``Worker`` runs one contender's worker script and talks to it one JSON line at
a time, with a deadline on every answer (a worker that hangs is killed and its
stderr's last lines are reported). ``BusyLoad`` runs N pure-Python spin loops
beside the contenders for a whole sitting, each bounded: killed at the end, and
ending by itself after a time limit or when the benchmark's process is gone.
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time

SPIN = (
    "import os, time\n"
    "end, parent = time.monotonic() + {limit}, os.getppid()\n"
    "while time.monotonic() < end and os.getppid() == parent:\n"
    "    for _ in range(100000):\n"
    "        pass\n"
)


class WorkerError(RuntimeError):
    """A worker stopped, timed out or answered something else than JSON."""


class Worker:
    """One worker process answering requests on stdin with JSON lines on stdout."""

    def __init__(self, name, command, env=None, cwd=None):
        self.name = name
        self._stderr = tempfile.TemporaryFile()
        self._buffer = b""
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,  # a file: a chatty library never blocks on a full pipe
            env=env,
            cwd=cwd,
        )

    def read(self, timeout):
        """The next JSON line, within ``timeout`` seconds; WorkerError otherwise."""
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError(f"{self.name}: no answer within {timeout:.0f} s{self._tail()}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self.process.wait()
                    raise WorkerError(f"{self.name}: worker exited {code}{self._tail()}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerError(f"{self.name}: answered {line[:200]!r}{self._tail()}") from None

    def request(self, line, timeout):
        """Send ``line``; its answer (a dict) within ``timeout`` seconds."""
        try:
            self.process.stdin.write((line + "\n").encode())
            self.process.stdin.flush()
        except OSError as exc:
            raise WorkerError(f"{self.name}: cannot write ({exc}){self._tail()}") from None
        return self.read(timeout)

    def close(self):
        """Ask the worker to end; kill it if it does not within 30 s."""
        try:
            self.process.stdin.write(b"quit\n")
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self._stderr.close()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def _tail(self):
        """The last lines of the worker's stderr, to say why it failed."""
        try:
            self._stderr.seek(0)
            lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return (": " + " | ".join(lines[-4:])) if lines else ""


class BusyLoad:
    """``count`` spinning processes for the duration of a ``with`` block (at most ``limit`` s)."""

    def __init__(self, count, limit):
        self.count, self.limit = count, limit
        self.processes = []

    def __enter__(self):
        code = SPIN.format(limit=float(self.limit))
        for _ in range(self.count):
            self.processes.append(
                subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
            )
        return self

    def __exit__(self, *exc_info):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []
        return False

    def alive(self):
        """How many of the spinners still run (they should, all sitting long)."""
        return sum(1 for process in self.processes if process.poll() is None)


def rotated(items, shift):
    """``items`` rotated left by ``shift``: each round starts with another contender."""
    items = list(items)
    if not items:
        return items
    shift %= len(items)
    return items[shift:] + items[:shift]


def load_average():
    """The 1-minute load average (None where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None
