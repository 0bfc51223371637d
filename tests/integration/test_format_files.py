"""The one atomic write against real writers killed with SIGKILL mid-write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jupyter_percent_agent.format import write_text
from tests.helpers.files import leftovers

# A process that writes ARGV[2] "a"s to the file ARGV[1], says "ready", then rewrites it with
# as many "b"s and "a"s in turn until killed (ARGV[3] "named": as where there is no O_TMPFILE).
WRITER = textwrap.dedent("""
    import os, sys
    if sys.argv[3] == "named":  # as on a filesystem without O_TMPFILE
        del os.O_TMPFILE
    from jupyter_percent_agent.format import write_text
    path, size = sys.argv[1], int(sys.argv[2])
    texts = [c * size for c in "ab"]
    write_text(path, texts[0])
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        write_text(path, texts[n % 2])
""")


SIZE = 40 << 20  # a named writer's text: its temporary file lives long enough to be caught


def _kill_writers(tmp_path: Path, how: str, rounds: int) -> list[list[str]]:
    """Start a writer rewriting a 40 MB file in a loop and SIGKILL it, ``rounds`` times, at
    various moments; returns the files other than the target found right after each kill.
    After every kill the file is whole: the old text or the new, never a mix."""
    path = tmp_path / "big.msg.md"
    size = 40 << 20
    found = []
    for i in range(rounds):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(size), how],
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
        time.sleep(0.1 + 0.037 * i)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        found.append(leftovers(tmp_path, path.name))
        assert path.read_text() in ("a" * size, "b" * size)
    return found


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE here (the sweep is tested below)")
    found = _kill_writers(tmp_path, "anonymous", rounds=6)
    # The temporary file has a name only between its link and its rename, a few microseconds
    # (then the sweep below removes it): 6 kills, at most one there.
    assert sum(1 for names in found if names) <= 1, found
    write_text(tmp_path / "big.msg.md", "after")
    assert leftovers(tmp_path, "big.msg.md") == []


@pytest.fixture
def named_writer(tmp_path: Path):
    """A writer rewriting ``big.msg.md`` in a loop the named way (as without O_TMPFILE)."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "big.msg.md"),
                               str(SIZE), "named"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
    yield writer
    writer.send_signal(signal.SIGCONT)
    writer.kill()
    writer.wait()


def _stop_mid_write(writer: subprocess.Popen, folder: Path) -> list[str]:
    """Stop ``writer`` (SIGSTOP) at a moment it holds its temporary file; that file's name."""
    for _ in range(200):
        writer.send_signal(signal.SIGSTOP)
        time.sleep(0.01)  # the signal is delivered
        held = leftovers(folder, "big.msg.md")
        if held:
            return held
        writer.send_signal(signal.SIGCONT)
        time.sleep(0.017)
    raise AssertionError("never caught the writer mid-write: nothing was tested")


@pytest.mark.slow
def test_the_next_write_sweeps_what_killed_writers_left(tmp_path: Path, named_writer) -> None:
    """Without O_TMPFILE (another filesystem, another OS) a killed writer leaves its named
    temporary file; the next write of the same file removes it."""
    held = _stop_mid_write(named_writer, tmp_path)
    named_writer.send_signal(signal.SIGKILL)  # killed while stopped: mid-write
    named_writer.wait()
    path = tmp_path / "big.msg.md"
    assert leftovers(tmp_path, path.name) == held
    assert path.read_text() in ("a" * SIZE, "b" * SIZE)
    write_text(path, "after")
    assert leftovers(tmp_path, path.name) == []
    assert path.read_text() == "after"


@pytest.mark.slow
def test_a_live_writers_temporary_file_is_not_swept(tmp_path: Path, named_writer) -> None:
    """A writer stopped (SIGSTOP) mid-write holds its temporary file: the sweep leaves it, and
    the writer's own rename still succeeds once it goes on."""
    held = _stop_mid_write(named_writer, tmp_path)
    write_text(tmp_path / "big.msg.md", "meanwhile")
    assert leftovers(tmp_path, "big.msg.md") == held
    named_writer.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 30
    while (tmp_path / held[0]).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (tmp_path / held[0]).exists()  # renamed over the file by its writer
