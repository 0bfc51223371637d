"""The fork API JupyterLab's "Fork from here" calls (``/percent-agent/fork``), through a real
jupyter_server with the extension enabled."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_percent_agent import format as fmt
from tests.paths import TEST_DATA


async def test_fork_from_a_cell_writes_the_fork_beside_it_and_names_it(
    jp_fetch, jp_root_dir: Path
) -> None:
    (jp_root_dir / "talks").mkdir()
    original = jp_root_dir / "talks" / "basic.msg.md"
    shutil.copy(TEST_DATA / "runtime" / "basic.msg.md", original)
    before = original.read_bytes()
    r = await jp_fetch(
        "percent-agent",
        "fork",
        method="POST",
        body=json.dumps({"path": "talks/basic.msg.md", "cell": "a2"}),
    )
    assert json.loads(r.body) == {"path": "talks/basic.fork-1.msg.md"}
    nb = fmt.read(jp_root_dir / "talks" / "basic.fork-1.msg.md")
    assert [fmt.cell_id(c) for c in nb["cells"][1:]] == ["a1", "a2"]
    assert fmt.front_matter(nb)["forked_from"] == {"file": "basic.msg.md", "cell": "a2"}
    assert original.read_bytes() == before


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"path": "../x.msg.md", "cell": "a1"}, 400),
        ({"path": "basic.msg.md", "cell": "front-matter"}, 400),
        ({"path": "basic.msg.md"}, 400),
    ],
)
async def test_a_fork_the_api_cannot_make_is_refused(
    jp_fetch, jp_root_dir: Path, body: dict, code: int
) -> None:
    shutil.copy(TEST_DATA / "runtime" / "basic.msg.md", jp_root_dir / "basic.msg.md")
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "fork", method="POST", body=json.dumps(body))
    assert err.value.code == code
    assert sorted(p.name for p in jp_root_dir.iterdir()) == ["basic.msg.md"]
