"""The mypyc-compiled format core: used only when current, and equal to the Python sources.

``make setup`` builds it (scripts/compile_format.py); the rest of the suite runs on it. Here:
the rule that keeps a stale build from ever being used, and a comparison of the two cores,
run side by side on the same inputs (good, bad and mutated), down to the error messages.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from importlib.machinery import ExtensionFileLoader
from pathlib import Path

import pytest

import jupyter_percent_agent.format as fmt
from jupyter_percent_agent.format import compiled

FORMAT_DIR = Path(fmt.__file__).parent


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A copy of the compiled modules' sources with a build stamp that matches them."""
    for name in compiled.MODULES:
        shutil.copy(FORMAT_DIR / f"{name}.py", tmp_path / f"{name}.py")
    built = tmp_path / compiled.BUILD_DIR
    built.mkdir()
    (built / compiled.STAMP).write_text(json.dumps(compiled.stamp(str(tmp_path))))
    return tmp_path


def test_a_build_whose_stamp_matches_its_sources_is_used(sources: Path) -> None:
    assert compiled.usable(str(sources)) == str(sources / compiled.BUILD_DIR)


def test_an_edited_source_makes_the_build_stale(sources: Path) -> None:
    path = sources / "parse.py"
    path.write_bytes(path.read_bytes() + b"\n")
    assert compiled.usable(str(sources)) is None


def test_a_build_for_another_python_is_not_used(sources: Path) -> None:
    stamp_path = sources / compiled.BUILD_DIR / compiled.STAMP
    stamp = json.loads(stamp_path.read_text())
    stamp["python"] = "cpython-399"
    stamp_path.write_text(json.dumps(stamp))
    assert compiled.usable(str(sources)) is None


@pytest.mark.parametrize("stamp_text", [None, "", "{not json", "[]"])
def test_a_missing_or_broken_stamp_means_the_sources(sources: Path, stamp_text) -> None:
    stamp_path = sources / compiled.BUILD_DIR / compiled.STAMP
    if stamp_text is None:
        stamp_path.unlink()
    else:
        stamp_path.write_text(stamp_text)
    assert compiled.usable(str(sources)) is None


def test_the_environment_can_ask_for_the_sources(sources: Path, monkeypatch) -> None:
    monkeypatch.setenv("PERCENT_AGENT_PURE_PYTHON", "1")
    assert compiled.usable(str(sources)) is None
    monkeypatch.setenv("PERCENT_AGENT_PURE_PYTHON", "0")
    assert compiled.usable(str(sources)) is not None


def test_the_compiled_core_is_in_use_after_setup() -> None:
    if not fmt.COMPILED:
        if os.environ.get("CI"):
            pytest.fail("the compiled format core is not in use: make setup must build it "
                        "(scripts/compile_format.py)")
        pytest.skip("no current compiled format core (make compile builds one)")
    built = str(FORMAT_DIR / compiled.BUILD_DIR) + os.sep
    for name in compiled.MODULES:
        module = sys.modules[f"jupyter_percent_agent.format.{name}"]
        assert isinstance(module.__loader__, ExtensionFileLoader), name
        assert module.__spec__.origin.startswith(built), name
    errors = sys.modules["jupyter_percent_agent.format.errors"]
    assert not isinstance(getattr(errors, "__loader__", None), ExtensionFileLoader)
    # FormatError stays one class, whichever core raised it
    with pytest.raises(fmt.FormatError, match="line 1"):
        fmt.reads("[^a]: [markdown]\n")


# ----------------------------------------------------------------- the two cores, compared

PROBE = r"""
import json, sys
from jupyter_percent_agent import format as fmt

def probe(texts):
    results = []
    for name, text in texts:
        path = name if name.endswith("md") else None
        try:
            nb = fmt.reads(text, path=path)
            results.append(["ok", nb, fmt.writes(nb, path=path)])
        except fmt.FormatError as err:
            results.append(["error", str(err)])
    return results

if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        texts = json.load(f)
    json.dump([fmt.COMPILED, probe(texts)], sys.stdout)
"""

PIECES = ["# %%\n", "## %%% [output]\n", "```\n", "~~~~\n", "[^x]: [code]\n", "\\# %%\n",
          "[^m1]: [tool] a=1\n", "\r\n", "\n", "# %% T[^m1]\n", "stdout> hi\n",
          "[^z]: [markdown] a=\"b c\" d='e' f=[1,2] g={\"h\": null}\n"]
BAD = [
    "[^a]: [markdown]\n\nno heading above\n",
    "# %%[^a]\n[^a]: [nonsense]\n",
    "# %%[^a]\n[^a]: [markdown] k=\"unterminated\n",
    "# %%[^a]\n[^a]: [markdown]\n\n```\nnever closed\n# %%[^b]\n",
    "## %%%[^a.1]\n[^a.1]: [planner]\n\nreply first\n",
    "# %%[^a]\n[^a]: [markdown]\n\n# %%[^a]\n[^a]: [markdown]\n",
    "---\nmessage_section: Discussion\n---\n\n# Notes\n",
    "# %%[^a]\r\n[^a]: [markdown]\r\n\r\nhello\r\n",
]


def _inputs(shared_dir: Path) -> list[tuple[str, str]]:
    data = Path(__file__).parent / "data" / "format"
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(data.rglob("*.md"))]
    for path in sorted((shared_dir / "corpus" / "jupytext-ipynb").rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        try:
            texts.append((path.name, fmt.writes(nb)))
        except fmt.FormatError:
            continue
    texts += [(f"bad-{i}.msg.md", text) for i, text in enumerate(BAD)]
    # line-level mutants of the hand-written files: dropped, doubled, swapped and inserted
    # lines, so that the cores meet the liberal reader's rules and its errors
    rng = random.Random(20261122)
    originals = [t for n, t in texts[:21]]
    for i in range(300):
        lines = rng.choice(originals).splitlines(keepends=True) or ["\n"]
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(lines))
            op = rng.randrange(4)
            if op == 0 and len(lines) > 1:
                del lines[at]
            elif op == 1:
                lines.insert(at, lines[at])
            elif op == 2:
                other = rng.randrange(len(lines))
                lines[at], lines[other] = lines[other], lines[at]
            else:
                lines.insert(at, rng.choice(PIECES))
        texts.append((f"mutant-{i}.msg.md", "".join(lines)))
    return texts


def test_the_compiled_and_python_cores_read_and_write_alike(shared_dir: Path,
                                                            tmp_path: Path) -> None:
    if not fmt.COMPILED:
        pytest.skip("no current compiled format core to compare with the sources")
    texts = _inputs(shared_dir)
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    env = {**os.environ, "PERCENT_AGENT_PURE_PYTHON": "1"}
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py"),
                           str(tmp_path / "texts.json")],
                          capture_output=True, text=True, env=env, check=True, timeout=300)
    pure_compiled, pure = json.loads(done.stdout)
    assert pure_compiled is False
    namespace: dict = {}
    exec(compile(PROBE, "probe.py", "exec"), namespace)
    ours = json.loads(json.dumps(namespace["probe"](texts)))
    errors = sum(1 for r in ours if r[0] == "error")
    assert 10 <= errors < len(texts) - 50  # both kinds of outcome are exercised
    for (name, _), mine, theirs in zip(texts, ours, pure, strict=True):
        assert mine == theirs, name
