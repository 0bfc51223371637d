"""One error vocabulary: every kind has its row in the one table, and the front ends show the
same line for the same failure (``tce`` an exit code, the contents manager an HTTP status)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import errors
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.cli import main

MALFORMED = "## %% A[^a]\n\nx\n\n## %% B[^a]\n\ny\n"  # the id a, twice: line 5


def test_every_kind_has_its_row_in_the_one_table() -> None:
    assert set(errors.TABLE) == set(errors.Kind)
    codes = {k: m.exit_code for k, m in errors.TABLE.items()}
    assert codes == {errors.Kind.MODEL: 1, errors.Kind.FAILED: 1, errors.Kind.USAGE: 2,
                     errors.Kind.BAD_FILE: 3, errors.Kind.TOOL: 4, errors.Kind.AGENT: 5,
                     errors.Kind.REFUSED: 6, errors.Kind.INTERRUPTED: 130}
    assert errors.TABLE[errors.Kind.REFUSED].http_status == 403
    assert errors.TABLE[errors.Kind.BAD_FILE].http_status == 400


def test_the_package_errors_keep_their_builtin_bases() -> None:
    """A user's ``except ValueError`` / ``except PermissionError`` keeps catching them."""
    from jupyter_percent_agent.trust import TrustError

    bad = fmt.FormatError("bad", line=3, path="x.msg.md")
    refused = TrustError("a path out", kind="path")
    assert isinstance(bad, ValueError) and isinstance(bad, errors.PercentAgentError)
    assert isinstance(refused, PermissionError) and refused.error_kind is errors.Kind.REFUSED
    assert errors.report(bad) == errors.Report(errors.Kind.BAD_FILE, "FormatError",
                                               "x.msg.md:3: bad")
    assert errors.report(RuntimeError("a bug")) is None


def _manager(root: Path):
    from jupyter_server.services.contents.largefilemanager import LargeFileManager

    from jupyter_percent_agent.contents import build_message_contents_manager_class

    return build_message_contents_manager_class(LargeFileManager)(root_dir=str(root))


def _both(root: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, int, str]:
    """(tce's exit code, its line; the contents manager's status, its message) on ``name``."""
    from tornado.web import HTTPError

    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["list", name])
    with pytest.raises(HTTPError) as info:
        _manager(root).get(name)
    return (result.exit_code, result.stderr.strip().removeprefix("tce: "),
            info.value.status_code, info.value.log_message)


def test_a_malformed_file_is_the_same_line_in_tce_and_in_jupyterlab(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.msg.md").write_text(MALFORMED, encoding="utf-8")
    code, line, status, message = _both(tmp_path, "bad.msg.md", monkeypatch)
    assert (code, status) == (3, 400)
    assert line == message and line.startswith("bad.msg.md:5: ")


def test_a_file_linked_out_of_its_folder_is_the_same_refusal_in_tce_and_in_jupyterlab(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside.msg.md"
    outside.write_text("# %% secret[^s]\n[^s]: [markdown]\n\nMy PIN\n", encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.msg.md").symlink_to(outside)
    code, line, status, message = _both(root, "notes.msg.md", monkeypatch)
    assert (code, status) == (6, 403)
    assert line == message and line.startswith("notes.msg.md: refused: ")
    assert str(tmp_path) not in message  # the server never names its own folders
