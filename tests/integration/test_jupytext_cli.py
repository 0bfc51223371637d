"""The message format through the real ``jupytext`` command (the venv's own, in a subprocess).

Nothing here registers the format by hand: the startup hook installed with the package must
make the plain command know it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from jupyter_percent_agent import format as core
from jupyter_percent_agent.format.runner import without_runner_cell_keys
from jupyter_percent_agent.jupytext_format import looks_like_message_text
from tests.paths import ROOT, TEST_DATA

BIN = Path(sys.executable).parent
JUPYTEXT = str(BIN / "jupytext")


def run_jupytext(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [JUPYTEXT, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )
    assert proc.returncode == 0, f"jupytext {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def load_ipynb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def comparable_cells(nb: dict) -> list[dict]:
    """What must survive a conversion: type, source, metadata, outputs, execution count (a
    runner's timings are not kept in a text notebook, as jupytext's own filters say)."""
    cells = []
    for cell in nb["cells"]:
        source = cell["source"]
        cells.append(
            {
                "cell_type": cell["cell_type"],
                "source": "".join(source) if isinstance(source, list) else source,
                "metadata": dict(without_runner_cell_keys(cell.get("metadata", {}))),
                "outputs": [_plain_output(o) for o in cell.get("outputs", [])],
                "execution_count": cell.get("execution_count"),
            }
        )
    return cells


def _plain_output(output: dict) -> dict:
    out = json.loads(json.dumps(output))
    for key in ("text", "traceback"):
        if isinstance(out.get(key), list) and key == "text":
            out[key] = "".join(out[key])
    for mime, value in list(out.get("data", {}).items()):
        if isinstance(value, list):
            out["data"][mime] = "".join(value)
    return out


@pytest.fixture
def chat(tmp_path: Path, data_dir: Path) -> Path:
    path = tmp_path / "chat.msg.md"
    shutil.copy(data_dir / "jupytext" / "chat.msg.md", path)
    return path


@pytest.fixture
def corpus_notebook(tmp_path: Path, shared_dir: Path) -> Path:
    src = shared_dir / "corpus" / "jupytext-ipynb" / "ipynb_py" / "text_outputs_and_images.ipynb"
    path = tmp_path / "notebook.ipynb"
    shutil.copy(src, path)
    return path


# --- the startup hook -------------------------------------------------------------------------


def test_hook_files_are_installed_at_the_site_packages_root() -> None:
    purelib = Path(sysconfig.get_paths()["purelib"])
    pth = purelib / "jupyter_percent_agent_hook.pth"
    start = purelib / "jupyter_percent_agent_hook.start"
    module = purelib / "_jupyter_percent_agent_hook.py"
    assert pth.is_file() and start.is_file() and module.is_file(), (
        "the startup hook is not installed: run `pip install -e .` (make setup)"
    )
    source = ROOT / "jupyter_percent_agent" / "_hook"
    for installed in (pth, start, module):
        assert installed.read_text() == (source / installed.name).read_text(), (
            f"{installed} is stale (editable installs copy it): run `pip install -e .`"
        )
    assert pth.read_text().startswith("import _jupyter_percent_agent_hook")
    assert start.read_text().strip() == "_jupyter_percent_agent_hook:install"


def test_interpreter_start_imports_neither_jupytext_nor_the_package() -> None:
    out = run_python(
        "import sys, json; print(json.dumps(["
        "sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jupytext', 'jupyter_percent_agent', 'nbformat', 'litellm')),"
        "[type(f).__name__ for f in sys.meta_path]]))"
    )
    imported, finders = json.loads(out)
    assert imported == []
    assert "MsgFormatFinder" in finders


def test_importing_jupytext_registers_the_format() -> None:
    code = (
        "import jupytext.formats as f\n"
        "from jupyter_percent_agent.jupytext_format import is_registered\n"
        "print(is_registered(), f.JUPYTEXT_FORMATS[-1].format_name,"
        " f.get_format_implementation('.md').format_name)"
    )
    assert run_python(code) == "True msg markdown"


def test_environment_variable_turns_the_hook_off() -> None:
    code = "import jupytext.formats as f; print('msg' in f._VALID_FORMAT_NAMES)"
    assert run_python(code, env={"JUPYTER_PERCENT_AGENT_NO_HOOK": "1"}) == "False"
    assert run_python(code, env={"JUPYTER_PERCENT_AGENT_NO_HOOK": "0"}) == "True"


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", " OFF ", "No", "1", "yes",
                                   "true", "on", "anything"])
def test_the_hook_reads_its_flag_by_the_packages_one_rule(
        value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up hook keeps its own copy of the on/off rule (it may not import the
    package); the copy had lost "off"."""
    from jupyter_percent_agent._hook import _jupyter_percent_agent_hook as hook
    from jupyter_percent_agent.envflags import env_flag

    monkeypatch.setenv(hook.ENV_DISABLE, value)
    assert hook.disabled() == env_flag(hook.ENV_DISABLE)


# --- conversions --------------------------------------------------------------------------------


def test_to_ipynb_writes_name_msg_ipynb(chat: Path) -> None:
    run_jupytext("--to", "ipynb", chat.name, cwd=chat.parent)
    out = chat.parent / "chat.msg.ipynb"
    assert out.is_file()
    expected = core.reads(chat.read_text(encoding="utf-8"), path=str(chat))
    nb = load_ipynb(out)
    assert comparable_cells(nb) == comparable_cells(expected)
    assert any(cell.get("outputs") for cell in nb["cells"]), "replies must arrive as outputs"


def test_from_msg_md_with_output_path(chat: Path) -> None:
    run_jupytext(
        "--from", ".msg.md", "--to", "ipynb", "-o", "other.ipynb", chat.name, cwd=chat.parent
    )
    expected = core.reads(chat.read_text(encoding="utf-8"), path=str(chat))
    assert comparable_cells(load_ipynb(chat.parent / "other.ipynb")) == comparable_cells(expected)


def test_to_msg_md_keeps_outputs(corpus_notebook: Path) -> None:
    run_jupytext("--to", ".msg.md", corpus_notebook.name, cwd=corpus_notebook.parent)
    text = (corpus_notebook.parent / "notebook.msg.md").read_text(encoding="utf-8")
    assert looks_like_message_text(text)
    back = core.reads(text, path="notebook.msg.md")
    original = load_ipynb(corpus_notebook)
    assert [c["outputs"] for c in comparable_cells(back)] == [
        c["outputs"] for c in comparable_cells(original)
    ]
    assert sum(len(c.get("outputs", [])) for c in original["cells"]) > 5


def test_to_md_colon_msg_writes_a_message_file_that_reads_back(corpus_notebook: Path) -> None:
    folder = corpus_notebook.parent
    run_jupytext("--to", "md:msg", corpus_notebook.name, cwd=folder)
    text = (folder / "notebook.md").read_text(encoding="utf-8")
    assert looks_like_message_text(text)
    # Read back with no format given: detected by content.
    run_jupytext("--to", "ipynb", "-o", "back.ipynb", "notebook.md", cwd=folder)
    assert comparable_cells(load_ipynb(folder / "back.ipynb")) == comparable_cells(
        load_ipynb(corpus_notebook)
    )


def test_empty_msg_md_is_a_message_file(tmp_path: Path) -> None:
    (tmp_path / "empty.msg.md").write_text("", encoding="utf-8")
    run_jupytext("--to", "ipynb", "empty.msg.md", cwd=tmp_path)
    nb = load_ipynb(tmp_path / "empty.msg.ipynb")
    expected = core.reads("", path="empty.msg.md")
    assert nb["cells"] == []
    assert nb["metadata"].get("kernelspec") == expected["metadata"].get("kernelspec")


def test_plain_jupytext_markdown_stays_markdown(tmp_path: Path, data_dir: Path) -> None:
    shutil.copy(data_dir / "jupytext" / "plain_jupytext.md", tmp_path / "plain.md")
    run_jupytext("--to", "ipynb", "plain.md", cwd=tmp_path)
    nb = load_ipynb(tmp_path / "plain.ipynb")
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "code"]
    assert "# %% this is a comment" in "".join(nb["cells"][1]["source"])
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_metadata_added_in_jupyterlab_survives_the_text_file(chat: Path) -> None:
    """No ``jupyter:`` header, so jupytext would add a cell-metadata filter: we must not."""
    folder = chat.parent
    run_jupytext("--to", "ipynb", chat.name, cwd=folder)
    ipynb = folder / "chat.msg.ipynb"
    nb = load_ipynb(ipynb)
    nb["cells"][0]["metadata"]["tags"] = ["important", "draft"]
    nb["cells"][0]["metadata"]["added_in_lab"] = {"x": [1, 2]}
    nb["cells"][-1]["metadata"]["collapsed"] = True
    ipynb.write_text(json.dumps(nb), encoding="utf-8")
    chat.unlink()
    run_jupytext("--to", ".msg.md", "-o", "chat.msg.md", ipynb.name, cwd=folder)
    back = core.reads(chat.read_text(encoding="utf-8"), path=str(chat))
    assert back["cells"][0]["metadata"]["tags"] == ["important", "draft"]
    assert back["cells"][0]["metadata"]["added_in_lab"] == {"x": [1, 2]}
    assert back["cells"][-1]["metadata"]["collapsed"] is True


def test_set_formats_then_sync_keeps_the_pair_in_step(corpus_notebook: Path) -> None:
    folder = corpus_notebook.parent
    run_jupytext("--set-formats", "ipynb,.msg.md", corpus_notebook.name, cwd=folder)
    msg = folder / "notebook.msg.md"
    assert msg.is_file()
    paired = core.reads(msg.read_text(encoding="utf-8"), path=str(msg))
    assert paired["metadata"]["jupytext"]["formats"] == "ipynb,.msg.md"

    # Edit the notebook (as JupyterLab would, without our contents manager): source and tags.
    nb = load_ipynb(corpus_notebook)
    nb["cells"][0]["source"] = "Edited in the notebook."
    nb["cells"][0]["metadata"]["tags"] = ["edited"]
    corpus_notebook.write_text(json.dumps(nb), encoding="utf-8")
    _make_newer(corpus_notebook, msg)
    run_jupytext("--sync", corpus_notebook.name, cwd=folder)
    from_text = core.reads(msg.read_text(encoding="utf-8"), path=str(msg))
    assert from_text["cells"][0]["source"] == "Edited in the notebook."
    assert from_text["cells"][0]["metadata"]["tags"] == ["edited"]

    # Edit the message file (as an editor or `tce` would): a new source and a new output.
    from_text["cells"][0]["source"] = "Edited in the message file."
    code_cell = next(c for c in from_text["cells"] if c["cell_type"] == "code")
    code_cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "fresh\n"}]
    core.write(from_text, msg)
    _make_newer(msg, corpus_notebook)
    run_jupytext("--sync", msg.name, cwd=folder)
    nb = load_ipynb(corpus_notebook)
    assert "".join(nb["cells"][0]["source"]) == "Edited in the message file."
    assert nb["cells"][0]["metadata"]["tags"] == ["edited"]
    synced_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert [_plain_output(o) for o in synced_code["outputs"]] == [
        {"output_type": "stream", "name": "stdout", "text": "fresh\n"}
    ]


def test_a_message_file_paired_as_plain_md_stays_a_message_file_through_sync(chat: Path) -> None:
    """``--set-formats ipynb,md`` names the message file's own extension without a format:
    ``--sync`` rewrote it as jupytext Markdown (replies gone from it, ``tce list`` empty)."""
    folder = chat.parent
    before = comparable_cells(core.reads(chat.read_text(encoding="utf-8"), path=str(chat)))
    run_jupytext("--set-formats", "ipynb,md", chat.name, cwd=folder)
    for _ in range(2):
        run_jupytext("--sync", chat.name, cwd=folder)
        text = chat.read_text(encoding="utf-8")
        assert "format_name: markdown" not in text and looks_like_message_text(text)
        assert comparable_cells(core.reads(text, path=str(chat))) == before
    assert comparable_cells(load_ipynb(folder / "chat.msg.ipynb")) == before


def test_a_message_file_that_is_not_utf8_is_one_line_as_tce_says_it(tmp_path: Path) -> None:
    """jupytext showed a UnicodeDecodeError traceback where tce says where and what."""
    path = tmp_path / "latin.msg.md"
    path.write_bytes(b"# %% Hi[^a]\n[^a]: [markdown]\n\ncaf\xe9\n")
    for args in (["--to", "ipynb"], ["--sync"]):
        proc = subprocess.run([JUPYTEXT, *args, path.name], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 3, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "jupytext: latin.msg.md:4: not UTF-8 text (byte 0xe9)" in proc.stderr.splitlines()
        assert sorted(os.listdir(tmp_path)) == ["latin.msg.md"]


def test_to_md_with_an_output_named_msg_md_writes_the_message_format(chat: Path) -> None:
    """``--to md -o x.msg.md`` wrote jupytext Markdown into a message file's name: every
    reply gone, and tce saw a file of no messages."""
    folder = chat.parent
    run_jupytext("--to", "ipynb", "-o", "trip.ipynb", chat.name, cwd=folder)
    run_jupytext("--to", "md", "-o", "back.msg.md", "trip.ipynb", cwd=folder)
    text = (folder / "back.msg.md").read_text(encoding="utf-8")
    assert "format_name: markdown" not in text and looks_like_message_text(text)
    expected = core.reads(chat.read_text(encoding="utf-8"), path=str(chat))
    back = core.reads(text, path=str(folder / "back.msg.md"))
    assert comparable_cells(back) == comparable_cells(expected)
    run_jupytext("--to", "md", "-o", "plain.md", "trip.ipynb", cwd=folder)  # not a message
    assert "format_name: markdown" in (folder / "plain.md").read_text(encoding="utf-8")


def test_to_msg_between_message_files_names_the_twin_without_a_second_msg(
        tmp_path: Path, data_dir: Path) -> None:
    """README: ``jupytext --to .msg.md analysis.msg.py`` converts; it wrote
    ``analysis.msg.msg.md`` (and ``--to .msg.py x.msg.md`` ``x.msg.msg.py``)."""
    script = data_dir / "format" / "script"
    shutil.copy(script / "analysis.msg.py", tmp_path / "analysis.msg.py")
    shutil.copy(script / "analysis.msg.md", tmp_path / "twin.msg.md")
    shutil.copy(script / "analysis.msg.md", tmp_path / "other.msg.md")
    run_jupytext("--to", ".msg.md", "analysis.msg.py", cwd=tmp_path)
    run_jupytext("--to", ".msg.py", "twin.msg.md", "other.msg.md", cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "analysis.msg.md", "analysis.msg.py", "other.msg.md", "other.msg.py", "twin.msg.md",
        "twin.msg.py"]
    expected = comparable_cells(core.reads((script / "analysis.msg.md").read_text(
        encoding="utf-8"), path="analysis.msg.md"))
    for name in ("analysis.msg.md", "twin.msg.py"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert comparable_cells(core.reads(text, path=name)) == expected


def _make_newer(path: Path, than: Path) -> None:
    stamp = max(than.stat().st_mtime, time.time()) + 2
    os.utime(path, (stamp, stamp))


# --- jupytext's own round-trip test over its 62 test notebooks ----------------------------------

CORPUS_XFAIL: dict[str, str] = {}
# Notebooks with a runner's metadata (docs/format.md, "What a runner writes"): a message file
# drops it as jupytext's own py:percent and md do, so --test-strict names that difference only.
RUNNER_METADATA = {"ipynb_py/frozen_cell.ipynb": "Cell metadata 'ExecuteTime' differ"}


def _corpus_notebooks() -> list[Path]:
    shared = Path(
        os.environ.get("PERCENT_AGENT_SHARED", ROOT.parent / "shared")
    )
    return sorted((shared / "corpus" / "jupytext-ipynb").glob("*/*.ipynb"))


@pytest.fixture(scope="module", params=[".msg.md", ".msg.py"])
def test_strict_results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """One real ``jupytext --test-strict --to .msg.md`` (and ``.msg.py``, the script form)
    run over the whole corpus.

    jupytext prints ``FILE: difference`` for a notebook that does not round-trip and, with
    ``--warn-only``, ``[jupytext] Error: ...`` after ``Reading FILE`` for one that raises.
    """
    notebooks = _corpus_notebooks()
    if not notebooks:
        pytest.skip("corpus not found")
    folder = tmp_path_factory.mktemp("corpus")
    names = []
    for i, src in enumerate(notebooks):
        name = f"nb{i:02d}.ipynb"
        shutil.copy(src, folder / name)
        names.append(name)
    proc = subprocess.run(
        [JUPYTEXT, "--warn-only", "--test-strict", "--to", request.param, *names],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # A notary of its own: jupytext marks every cell ``trusted`` when the machine's notary
        # has signed a notebook (a Jupyter save does), and --test-strict then reports that key
        # for every text format (md and py:percent too), since none stores it.
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONWARNINGS": "ignore",
             "JUPYTER_DATA_DIR": str(folder / "jupyter-data")},
        timeout=900,
    )
    problems: dict[str, str] = {}
    current = None
    for line in proc.stdout.splitlines():
        if line.startswith("[jupytext] Reading "):
            current = line.split()[2]
        elif line.startswith("[jupytext] Error:") and current:
            problems[current] = line
        for name in names:
            if line.startswith(f"{name}: "):
                problems[name] = line
    return {
        str(src.relative_to(src.parent.parent)): problems.get(name, "")
        for src, name in zip(notebooks, names, strict=True)
    }


@pytest.mark.timeout(1200)  # jupytext on the corpus may take 900 s
@pytest.mark.slow
@pytest.mark.parametrize(
    "notebook", [str(p.relative_to(p.parent.parent)) for p in _corpus_notebooks()] or ["none"]
)
def test_corpus_round_trips_strictly(notebook: str, test_strict_results: dict[str, str]) -> None:
    if notebook in CORPUS_XFAIL:
        pytest.xfail(CORPUS_XFAIL[notebook])
    if notebook in RUNNER_METADATA:  # not kept by a text notebook, jupytext's own included
        # (jupytext ends its difference with no newline: the next file's line follows)
        said = test_strict_results[notebook].split("[jupytext]")[0]
        assert said.endswith(f": {RUNNER_METADATA[notebook]}"), said
        return
    assert test_strict_results[notebook] == "", test_strict_results[notebook]


@pytest.fixture(scope="module", params=[".msg.md", ".msg.py"])
def corpus_there_and_back(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Every corpus notebook through the real CLI: ipynb -> .msg.md (or .msg.py) -> ipynb."""
    notebooks = _corpus_notebooks()
    if not notebooks:
        pytest.skip("corpus not found")
    folder = tmp_path_factory.mktemp("there_and_back")
    names = []
    for i, src in enumerate(notebooks):
        shutil.copy(src, folder / f"nb{i:02d}.ipynb")
        names.append(f"nb{i:02d}")
    env = {"PYTHONWARNINGS": "ignore"}
    run_jupytext(
        "--warn-only", "--to", request.param, *[f"{n}.ipynb" for n in names], cwd=folder,
        env=env,
    )
    run_jupytext(
        "--warn-only", "--to", "ipynb", *[f"{n}{request.param}" for n in names], cwd=folder,
        env=env,
    )
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    "index",
    [pytest.param(i, id=f"{p.parent.name}/{p.name}") for i, p in enumerate(_corpus_notebooks())],
)
def test_corpus_outputs_ids_and_metadata_survive_the_cli(
    index: int, corpus_there_and_back: Path
) -> None:
    name = f"nb{index:02d}"
    src = _corpus_notebooks()[index]
    key = f"{src.parent.name}/{src.name}"
    if key in CORPUS_XFAIL:
        pytest.xfail(CORPUS_XFAIL[key])
    original = load_ipynb(corpus_there_and_back / f"{name}.ipynb")
    back_path = corpus_there_and_back / f"{name}.msg.ipynb"
    assert back_path.is_file(), f"{key} did not convert"
    back = load_ipynb(back_path)
    assert comparable_cells(back) == comparable_cells(original)
    if all("id" in c for c in original["cells"]):
        assert [c["id"] for c in back["cells"]] == [c["id"] for c in original["cells"]]


# --- names and Jupyter-internal metadata through a round trip ----------------------------------


def readme_jupytext_commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for line in readme.splitlines():
        if line.startswith("jupytext "):
            commands.append(line.split("#", 1)[0].split()[1:])
    return commands


def test_readme_jupytext_commands_round_trip_the_file_name_and_text(chat: Path) -> None:
    commands = readme_jupytext_commands()
    assert len(commands) == 2
    notes = chat.parent / "notes"
    notes.mkdir()
    trip = notes / "trip.msg.md"
    canonical = core.writes(core.reads(chat.read_text(encoding="utf-8"), path=str(chat)),
                            path=str(trip))
    trip.write_text(canonical, encoding="utf-8")
    for args in commands:
        run_jupytext(*args, cwd=chat.parent)
    assert sorted(p.name for p in notes.iterdir()) == ["trip.ipynb", "trip.msg.md"]
    # the same notebook (an .ipynb stores metadata keys sorted, so their order may change)
    assert core.reads(trip.read_text(encoding="utf-8"), path=str(trip)) == core.reads(
        canonical, path=str(trip))


def test_trusted_notebook_through_ipynb_adds_no_trusted_key(chat: Path) -> None:
    """jupytext marks every cell ``trusted`` when the .ipynb's signature is valid (as after
    Jupyter saved it); a message file, like nbformat's .ipynb writer, leaves that out."""
    import nbformat
    from nbformat.sign import NotebookNotary

    folder = chat.parent
    env = {"JUPYTER_DATA_DIR": str(folder / "jupyter-data")}
    text = core.writes(core.reads(chat.read_text(encoding="utf-8"), path=str(chat)),
                       path=str(chat))
    chat.write_text(text, encoding="utf-8")
    run_jupytext("--to", "ipynb", "-o", "chat.ipynb", chat.name, cwd=folder, env=env)
    ipynb = folder / "chat.ipynb"
    notary = NotebookNotary(data_dir=env["JUPYTER_DATA_DIR"])
    notary.sign(nbformat.read(ipynb, as_version=4))
    assert notary.check_signature(nbformat.read(ipynb, as_version=4))
    run_jupytext("--to", ".msg.md", "-o", "back.msg.md", ipynb.name, cwd=folder, env=env)
    back = (folder / "back.msg.md").read_text(encoding="utf-8")
    assert "trusted" not in back
    assert core.reads(back) == core.reads(text)


# --- notebooks from JupyterLab and from later nbformats ---------------------------------------

NOTEBOOKS = TEST_DATA / "format" / "notebooks"


@pytest.mark.parametrize("name", ["stdin_stream", "future_types", "later_minor_keys"])
def test_jupyterlab_and_future_notebooks_round_trip_exactly_through_the_cli(
    tmp_path: Path, name: str, trusted
) -> None:
    """A stdin stream (what JupyterLab records for input()), the cell and output types of a
    later nbformat, and a later minor version's keys on the notebook, its cells and outputs:
    .ipynb -> .msg.md -> .ipynb gives the same JSON. (The user's own folder: in one they have
    not trusted, the .ipynb made from a message file names the agent kernel, whatever the
    message file names; tests/integration/test_red_team_jupytext.py.)"""
    trusted(tmp_path)
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", tmp_path / f"{name}.ipynb")
    run_jupytext("--to", ".msg.md", f"{name}.ipynb", cwd=tmp_path, env={"PYTHONWARNINGS": "ignore"})
    run_jupytext("--to", "ipynb", f"{name}.msg.md", cwd=tmp_path, env={"PYTHONWARNINGS": "ignore"})
    assert load_ipynb(tmp_path / f"{name}.msg.ipynb") == load_ipynb(tmp_path / f"{name}.ipynb")


def test_jupyterlab_and_future_notebooks_pass_test_strict(tmp_path: Path) -> None:
    """jupytext's own strict round-trip test. Its comparer reads every cell's source, so the
    future cell that has none (valid: an unrecognized cell needs only a type and metadata) is
    left out of this one; the exact round trip above keeps it."""
    shutil.copy(NOTEBOOKS / "stdin_stream.ipynb", tmp_path / "stdin_stream.ipynb")
    future = load_ipynb(NOTEBOOKS / "future_types.ipynb")
    future["cells"] = [c for c in future["cells"] if "source" in c]
    (tmp_path / "future_types.ipynb").write_text(json.dumps(future), encoding="utf-8")
    proc = subprocess.run(
        [JUPYTEXT, "--test-strict", "--to", ".msg.md", "stdin_stream.ipynb",
         "future_types.ipynb"],
        cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore",
             "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data")},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "differ" not in proc.stdout + proc.stderr


def test_a_message_file_through_ipynb_and_back_is_the_same_bytes(tmp_path: Path,
                                                                  data_dir: Path) -> None:
    """An .ipynb holds every metadata dict with its keys sorted; the message file written from
    it puts the footnote attributes back in the format's one order, so the trip changes no
    byte (it once brought a reply's attributes back in alphabetical order)."""
    chat = tmp_path / "chat.msg.md"
    shutil.copy(data_dir / "format" / "canonical" / "conversation.msg.md", chat)
    text = chat.read_text(encoding="utf-8")
    assert 'time="2025-05-30T00:00:00+08:00" reasoning=1 model="gpt-4o-mini"' in text
    run_jupytext("--to", "ipynb", "-o", "trip.ipynb", chat.name, cwd=tmp_path)
    chat.unlink()
    run_jupytext("--to", ".msg.md", "-o", "chat.msg.md", "trip.ipynb", cwd=tmp_path)
    assert chat.read_text(encoding="utf-8") == text


# --- script message files (.msg.py) ---------------------------------------------------------


def test_script_message_file_through_md_and_ipynb_is_the_same_bytes(
    tmp_path: Path, data_dir: Path
) -> None:
    script = data_dir / "format" / "script"
    shutil.copy(script / "analysis.msg.py", tmp_path / "analysis.msg.py")
    text = (script / "analysis.msg.py").read_text(encoding="utf-8")
    run_jupytext("--to", ".msg.md", "-o", "twin.msg.md", "analysis.msg.py", cwd=tmp_path)
    assert (tmp_path / "twin.msg.md").read_text(encoding="utf-8") == (
        script / "analysis.msg.md").read_text(encoding="utf-8")
    run_jupytext("--to", "ipynb", "-o", "trip.ipynb", "analysis.msg.py", cwd=tmp_path)
    run_jupytext("--to", ".msg.py", "-o", "from_ipynb.msg.py", "trip.ipynb", cwd=tmp_path)
    run_jupytext("--to", ".msg.py", "-o", "from_md.msg.py", "twin.msg.md", cwd=tmp_path)
    assert (tmp_path / "from_ipynb.msg.py").read_text(encoding="utf-8") == text
    assert (tmp_path / "from_md.msg.py").read_text(encoding="utf-8") == text
    ipynb = load_ipynb(tmp_path / "trip.ipynb")
    assert "".join(ipynb["cells"][1]["source"]).startswith("# the numbers, one per line\n")


def test_script_message_file_pairs_with_ipynb_and_syncs(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "analysis.msg.py"
    shutil.copy(data_dir / "format" / "script" / "analysis.msg.py", path)
    run_jupytext("--set-formats", ".msg.py,ipynb", path.name, cwd=tmp_path)
    ipynb = tmp_path / "analysis.ipynb"
    nb = load_ipynb(ipynb)
    nb["cells"][2]["source"] = "A question edited in the notebook."
    ipynb.write_text(json.dumps(nb), encoding="utf-8")
    _make_newer(ipynb, path)
    run_jupytext("--sync", ipynb.name, cwd=tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "\n# A question edited in the notebook.\n" in text
    assert "\nnumbers = [3, 1, 2]\n" in text  # still a script
    back = core.read(path)
    assert back["cells"][2]["source"] == "A question edited in the notebook."
    assert core.cell_kind(back["cells"][1]) == "code"


def test_script_and_markdown_message_files_pair_and_sync(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "analysis.msg.py"
    shutil.copy(data_dir / "format" / "script" / "analysis.msg.py", path)
    run_jupytext("--set-formats", ".msg.md,.msg.py", path.name, cwd=tmp_path)
    twin = tmp_path / "analysis.msg.md"
    text = twin.read_text(encoding="utf-8")
    twin.write_text(text.replace("They are equal", "Both are equal"), encoding="utf-8")
    _make_newer(twin, path)
    run_jupytext("--sync", twin.name, cwd=tmp_path)
    script = path.read_text(encoding="utf-8")
    assert "\n# Both are equal: both are 6.\n" in script
    assert core.reads(script, path=str(path)) == core.reads(
        twin.read_text(encoding="utf-8"), path=str(twin))
    run = subprocess.run([sys.executable, path.name], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0 and run.stdout == "loaded 3\nchecked 6\n", run.stderr


@pytest.mark.parametrize(
    ("name", "to"),
    [
        ("analysis.msg.py", "py:percent"),  # the output name is the input's
        ("analysis.msg.md", "md:myst"),
        ("analysis.msg.md", "py:percent"),  # would write analysis.msg.py as a plain script
    ],
)
def test_jupytext_never_writes_a_message_file_in_another_format(
    tmp_path: Path, data_dir: Path, name: str, to: str
) -> None:
    """A conversation and its outputs are never replaced by a plain percent script or MyST
    page: one line naming the file and what to do, nothing written."""
    script = data_dir / "format" / "script"
    for each in ("analysis.msg.py", "analysis.msg.md"):
        shutil.copy(script / each, tmp_path / each)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    proc = subprocess.run(
        [JUPYTEXT, "--to", to, name], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("jupytext:")]
    assert "is a message file" in line and "--output" in line
    assert "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_jupytext_to_the_message_format_still_rewrites_a_message_file_in_place(
    tmp_path: Path, data_dir: Path
) -> None:
    path = tmp_path / "analysis.msg.py"
    shutil.copy(data_dir / "format" / "script" / "analysis.msg.py", path)
    before = path.read_bytes()
    run_jupytext("--to", "py", path.name, cwd=tmp_path)
    assert path.read_bytes() == before
