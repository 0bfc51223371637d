"""``tce fork``: a new file with the first N cells and their outputs, the original untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime.fork import fork_names
from jupyter_percent_agent.testing.environment import tce
from tests.paths import TEST_DATA

BASIC = TEST_DATA / "runtime" / "basic.msg.md"


def _copy(tmp_path: Path) -> Path:
    path = tmp_path / "basic.msg.md"
    shutil.copy(BASIC, path)
    return path


def test_fork_keeps_the_first_cells_with_their_outputs_and_says_where_it_came_from(
    tmp_path: Path,
) -> None:
    path = _copy(tmp_path)
    before = path.read_bytes()
    r = tce("fork", str(path), "3")
    assert r.exit_code == 0, r.output
    made = tmp_path / "basic.fork-1.msg.md"
    assert r.stdout.strip() == str(made)
    nb = fmt.read(made)
    cells = [c for c in nb["cells"] if fmt.document_part(c) is None]
    assert [fmt.cell_id(c) for c in cells] == ["a1", "a2", "a3"]
    assert fmt.output_text(cells[0]["outputs"][0]).strip() == "It is 4."
    assert fmt.output_text(cells[2]["outputs"][0]).strip() == "The knight won."
    front = fmt.front_matter(nb)
    assert front["forked_from"] == {"file": "basic.msg.md", "cell": "a3"}
    assert front["default_agent"] == "planner" and set(front["agents"]) == {"planner", "critic"}
    assert path.read_bytes() == before  # the original, byte for byte


def test_fork_without_a_name_never_writes_over_an_earlier_fork(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    assert tce("fork", str(path), "1").exit_code == 0
    first = (tmp_path / "basic.fork-1.msg.md").read_bytes()
    r = tce("fork", str(tmp_path / "basic"), "2")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "basic.fork-1.msg.md").read_bytes() == first
    second = fmt.front_matter(fmt.read(tmp_path / "basic.fork-2.msg.md"))
    assert second["forked_from"]["cell"] == "a2"
    # a fork of a fork counts on from the same name
    assert next(fork_names(tmp_path / "basic.fork-2.msg.md")).name == "basic.fork-1.msg.md"


def test_fork_to_a_named_file_elsewhere_points_back_relative_to_it(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    (tmp_path / "sub").mkdir()
    r = tce("fork", str(path), "4", "-o", str(tmp_path / "sub" / "other.msg.md"))
    assert r.exit_code == 0, r.output
    nb = fmt.read(tmp_path / "sub" / "other.msg.md")
    assert fmt.front_matter(nb)["forked_from"] == {"file": "../basic.msg.md", "cell": "a4"}


def test_fork_refuses_an_existing_file_and_a_cell_out_of_range(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    before = path.read_bytes()
    taken = tmp_path / "taken.msg.md"
    taken.write_text("keep me\n")
    r = tce("fork", str(path), "2", "-o", str(taken))
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        f"tce: {taken} exists: a fork never writes over a file (name another with -o)"
    )
    assert taken.read_text() == "keep me\n"
    for n in ("0", "5"):
        r = tce("fork", str(path), n)
        assert r.exit_code == 2, r.output
        assert r.stderr.strip() == (
            f"tce: cell {n}: basic.msg.md has 4 cells (tce list numbers them from 1)"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["basic.msg.md", "taken.msg.md"]
    assert path.read_bytes() == before
