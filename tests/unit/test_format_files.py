"""Files: the one atomic write (``format.write_text``) and where a path may lead (``safe_path``).

Real processes are killed with SIGKILL mid-write; real symbolic links, a real FIFO and real
``/proc`` files are read.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import FormatError, read_text, safe_path, write_text
from tests.helpers.files import leftovers

CHAT = "# %% Hello[^a]\n[^a]: [markdown]\n\nHello, agent.\n"


# --------------------------------------------------------------------------- atomic write


def test_write_text_replaces_the_file_in_one_rename_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("old text")
    path.chmod(0o640)
    with path.open("rb") as reader:
        inode = os.fstat(reader.fileno()).st_ino
        write_text(path, "new text")
        assert reader.read() == b"old text"  # a reader holds the whole old file
    assert path.stat().st_ino != inode
    assert path.read_text() == "new text"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert leftovers(tmp_path, "notes.txt") == []


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_text(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


def test_a_busy_file_does_not_list_its_folder_on_every_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task run writes its transcript after every step into a folder of a thousand others:
    the sweep (a listing of the folder) runs on a process's first write of a file and again
    after SWEEP_EVERY, not on every write. A leftover made meanwhile is swept then."""
    from jupyter_percent_agent.format import files

    listed: list[str] = []
    real_scandir = os.scandir
    monkeypatch.setattr(files.os, "scandir", lambda p: listed.append(p) or real_scandir(p))
    clock = [1000.0]
    monkeypatch.setattr(files.time, "monotonic", lambda: clock[0])
    path = tmp_path / "run.msg.md"
    for n in range(20):
        write_text(path, f"step {n}")
    assert len(listed) == 1
    (tmp_path / ".run.msg.md.0123456789ab.tmp").write_text("left by a killed writer")
    clock[0] += files.SWEEP_EVERY + 1
    write_text(path, "later")
    assert len(listed) == 2
    assert leftovers(tmp_path, "run.msg.md") == []


def test_write_makes_no_temporary_file_on_failure(tmp_path: Path) -> None:
    nb = fmt.reads(CHAT)
    nb["cells"][0]["source"] = 5  # not a message: writes() refuses it before any file exists
    with pytest.raises((FormatError, TypeError)):
        fmt.write(nb, tmp_path / "x.msg.md")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- symbolic links


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A private file outside the folder that holds the message files."""
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("# %% key[^k]\n[^k]: [markdown]\n\n-----BEGIN PRIVATE KEY-----\n")
    return secret


def test_a_link_out_of_its_folder_is_never_read(folder: Path, private: Path) -> None:
    (folder / "notes.msg.md").symlink_to(private)
    with pytest.raises(FormatError) as info:
        fmt.read(folder / "notes.msg.md")
    assert "symbolic link to a file outside its folder" in str(info.value)
    assert str(info.value).startswith(str(folder / "notes.msg.md"))
    assert "PRIVATE KEY" not in str(info.value)
    # relative, and through a chain that starts inside the folder
    (folder / "rel.msg.md").symlink_to(Path("..") / "home" / ".ssh" / "id_rsa")
    (folder / "hop.md").symlink_to(private)
    (folder / "chain.msg.md").symlink_to("hop.md")
    for name in ("rel.msg.md", "chain.msg.md"):
        with pytest.raises(FormatError, match="outside its folder"):
            fmt.read(folder / name)


def test_a_write_through_a_link_out_of_its_folder_is_refused(folder: Path,
                                                             private: Path) -> None:
    link = folder / "notes.msg.md"
    link.symlink_to(private)
    before = private.read_text()
    with pytest.raises(FormatError, match="outside its folder"):
        fmt.write(fmt.reads(CHAT), link)
    assert link.is_symlink() and private.read_text() == before


def test_a_link_inside_its_folder_is_read_and_written_through(folder: Path) -> None:
    (folder / "chats").mkdir()
    target = folder / "chats" / "2025.msg.md"
    target.write_text(CHAT)
    target.chmod(0o600)
    link = folder / "current.msg.md"
    link.symlink_to(Path("chats") / "2025.msg.md")
    nb = fmt.read(link)
    nb["cells"].append(fmt.new_message("Second message", cell_id="b"))
    fmt.write(nb, link)
    assert link.is_symlink()  # still a link, never replaced by a regular file
    assert os.readlink(link) == str(Path("chats") / "2025.msg.md")
    assert "Second message" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in (folder / "chats").iterdir()) == ["2025.msg.md"]


def test_a_fifo_is_refused_without_blocking(folder: Path) -> None:
    fifo = folder / "pipe.msg.md"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def reader() -> None:
        try:
            fmt.read(fifo)
            outcome.append(None)
        except BaseException as err:  # handed to the test thread
            outcome.append(err)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():  # unblock it before failing
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(outcome[0], FormatError) and "a FIFO" in str(outcome[0])
    with pytest.raises(FormatError, match="a FIFO"):
        fmt.write(fmt.reads(CHAT), fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.parametrize("special", ["/proc/self/environ", "/proc/self/status", "/dev/null",
                                     "/dev/zero"])
def test_devices_and_proc_files_are_refused(special: str) -> None:
    if not os.path.exists(special):
        pytest.skip(f"no {special} here")
    with pytest.raises(FormatError, match="refused"):
        read_text(special)


def test_a_link_to_proc_inside_a_folder_symlinked_from_proc_is_refused(folder: Path) -> None:
    """Even a link whose target counts as inside (a folder that is itself /proc/self) is not
    read: /proc files are refused whatever the path to them."""
    if not os.path.exists("/proc/self/environ"):
        pytest.skip("no /proc here")
    (folder / "proc").symlink_to("/proc/self")
    with pytest.raises(FormatError, match="refused"):
        fmt.read(folder / "proc" / "environ")


def test_safe_path_of_a_new_file_is_the_path(folder: Path) -> None:
    assert safe_path(folder / "new.msg.md") == str(folder / "new.msg.md")


def test_text_that_is_not_utf8_names_its_line(folder: Path) -> None:
    (folder / "latin.msg.md").write_bytes(b"# %% a[^a]\n[^a]: [markdown]\n\ncaf\xe9\n")
    with pytest.raises(FormatError) as info:
        fmt.read(folder / "latin.msg.md")
    assert info.value.line == 4 and "not UTF-8" in str(info.value)


def test_tce_reports_a_link_out_of_its_folder_as_a_refusal(folder: Path, private: Path) -> None:
    """A message file linked out of its folder is refused for safety, not malformed: `tce`
    says so in the refusal's form and exits 6 (EXIT_TRUST), reading nothing."""
    from click.testing import CliRunner

    from jupyter_percent_agent.cli import main

    (folder / "notes.msg.md").symlink_to(private)
    for args in (["chat", str(folder / "notes.msg.md"), "-m", "hi"],
                 ["list", str(folder / "notes.msg.md")]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 6, r.output
        assert "refused: a symbolic link to a file outside its folder" in r.stderr
        assert "PRIVATE KEY" not in r.output


def test_make_durable_syncs_the_file_and_its_folder(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The fsync a non-durable write left out, done later (task transcripts do it on a
    thread): the file, then its folder; a file gone meanwhile is passed over."""
    from jupyter_percent_agent.format import files, make_durable

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: synced.append(os.fstat(fd).st_ino)
                        or real_fsync(fd))
    path = tmp_path / "run.msg.md"
    write_text(path, "step 1", durable=False)
    assert synced == []
    make_durable(path)
    assert synced == [path.stat().st_ino, tmp_path.stat().st_ino]
    make_durable(tmp_path / "gone.msg.md")  # no error
    assert synced[-1] == tmp_path.stat().st_ino


def test_an_exclusive_write_makes_a_new_file_and_never_replaces_what_holds_the_name(
        tmp_path: Path) -> None:
    path = tmp_path / "fork.msg.md"
    write_text(path, "first\n", exclusive=True)
    assert path.read_text() == "first\n"
    with pytest.raises(FileExistsError):
        write_text(path, "second\n", exclusive=True)
    assert path.read_text() == "first\n"
    link = tmp_path / "link.msg.md"  # a link, even one to nothing yet, is a name taken
    link.symlink_to(tmp_path / "target.msg.md")
    with pytest.raises(FileExistsError):
        write_text(link, "third\n", exclusive=True)
    assert sorted(os.listdir(tmp_path)) == ["fork.msg.md", "link.msg.md"]  # no temporary left
