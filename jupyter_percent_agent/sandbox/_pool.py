"""A small pool of pre-started, single-use sandbox workers.

Started lazily by the first run, each worker is taken once and thrown away; a background
thread spawns replacements so that the next run finds a worker that has already paid for
interpreter start-up and the RestrictedPython import. Workers are plain ``Popen`` objects not
tied to any event loop, so one pool serves ``asyncio.run`` after ``asyncio.run``, threads, and
the sync API alike. Idle workers are killed at exit; a worker whose parent dies sees EOF on its
stdin and exits by itself.
"""

from __future__ import annotations

import atexit
import os
import select
import subprocess
import threading
from collections import deque

from . import _limits, _process

DEFAULT_SIZE = 2


class WorkerPool:
    """Pre-started workers, handed out one per run."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self._size = size
        self._idle: deque[subprocess.Popen[bytes]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._pid = os.getpid()

    @property
    def size(self) -> int:
        return self._size

    def resize(self, size: int) -> None:
        """Change the target number of idle workers (0 disables pooling)."""
        with self._lock:
            self._size = max(0, size)
            extra = [self._idle.popleft() for _ in range(max(0, len(self._idle) - self._size))]
            self._wake.notify_all()
        for proc in extra:
            _process.discard(proc)

    def acquire(self) -> subprocess.Popen[bytes]:
        """A worker for one run: an idle pre-started one if any, else a fresh one."""
        self._check_fork()
        with self._lock:
            proc = None
            while self._idle:
                candidate = self._idle.popleft()
                if candidate.poll() is None:
                    proc = candidate
                    break
                _process.close_pipes(candidate)
            self._ensure_thread()
            self._wake.notify_all()
        return proc if proc is not None else _process.spawn()

    def wait_full(self, timeout: float = 10.0) -> bool:
        """Block until the pool holds its target number of workers (for benchmarks)."""
        with self._lock:
            self._ensure_thread()
            self._wake.notify_all()
            return self._wake.wait_for(lambda: len(self._idle) >= self._size, timeout)

    def shutdown(self) -> None:
        """Kill every idle worker and stop refilling (until the next ``acquire``)."""
        with self._lock:
            self._closed = True
            idle = list(self._idle)
            self._idle.clear()
            self._wake.notify_all()
            thread = self._thread
        for proc in idle:
            _process.discard(proc)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)
        with self._lock:
            self._closed = False
            self._thread = None

    def _ensure_thread(self) -> None:
        if self._closed or self._size == 0:
            return
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._refill, name="sandbox-pool", daemon=True)
            self._thread.start()

    def _refill(self) -> None:
        while True:
            with self._lock:
                self._wake.wait_for(lambda: self._closed or len(self._idle) < self._size)
                if self._closed:
                    return
            try:
                proc = _process.spawn()
            except OSError:
                return
            # Pool it only once it has said "ready" (the frame stays in the pipe for the run).
            assert proc.stdout is not None
            readable, _, _ = select.select([proc.stdout], [], [], _limits.STARTUP_TIMEOUT)
            if not readable:
                _process.discard(proc)
                continue
            with self._lock:
                if self._closed or len(self._idle) >= self._size:
                    discard = True
                else:
                    self._idle.append(proc)
                    discard = False
                self._wake.notify_all()
            if discard:
                _process.discard(proc)

    def _check_fork(self) -> None:
        # After os.fork the inherited workers belong to the parent process: start afresh.
        if os.getpid() != self._pid:
            self._pid = os.getpid()
            self._idle = deque()
            self._lock = threading.Lock()
            self._wake = threading.Condition(self._lock)
            self._thread = None


POOL = WorkerPool()
atexit.register(POOL.shutdown)
