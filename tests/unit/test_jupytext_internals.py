"""Fails loudly when the jupytext internals the adapter relies on move.

jupytext has no plugin API: ``jupyter_percent_agent.jupytext_format`` changes a handful of
its module attributes (see its docstring). Each of them is checked here by name and shape,
so that a jupytext upgrade that renames or reshapes one breaks this file first, with a
message that says which internal moved.
"""

from __future__ import annotations

import inspect

import jupytext
import jupytext.combine
import jupytext.formats
import jupytext.jupytext

from jupyter_percent_agent import jupytext_format


def params(fn: object) -> list[str]:
    return list(inspect.signature(inspect.unwrap(fn)).parameters)  # type: ignore[arg-type]


def test_jupytext_version_is_the_pinned_minor() -> None:
    assert jupytext.__version__.startswith("1.19."), (
        f"jupytext {jupytext.__version__}: the adapter was written against 1.19; re-check "
        "every internal listed in jupyter_percent_agent/jupytext_format/__init__.py"
    )


def test_format_table_is_an_appendable_list_of_descriptions() -> None:
    formats = jupytext.formats
    assert isinstance(formats.JUPYTEXT_FORMATS, list), "JUPYTEXT_FORMATS is no longer a list"
    assert params(formats.NotebookFormatDescription.__init__)[:7] == [
        "self",
        "format_name",
        "extension",
        "header_prefix",
        "cell_reader_class",
        "cell_exporter_class",
        "current_version_number",
    ], "NotebookFormatDescription changed its constructor"
    assert isinstance(formats._VALID_FORMAT_NAMES, set), "_VALID_FORMAT_NAMES is no longer a set"
    assert formats.get_format_implementation(".md").format_name == "markdown"


def test_patched_functions_keep_their_signatures() -> None:
    formats = jupytext.formats
    assert params(formats.guess_format) == ["text", "ext"]
    assert params(formats.read_metadata) == ["text", "ext"]
    assert "read_metadata(text, ext)" in inspect.getsource(formats.read_format_from_metadata)
    assert params(formats.validate_one_format) == ["jupytext_format"]
    assert "validate_one_format(" in inspect.getsource(formats.long_form_one_format)
    assert params(jupytext.jupytext.read)[:2] == ["fp", "as_version"]
    assert params(jupytext.combine.combine_inputs_with_outputs) == [
        "nb_source",
        "nb_outputs",
        "fmt",
    ]
    # an .ipynb written from a message file keeps a later nbformat's top-level keys
    assert params(jupytext.jupytext.drop_text_representation_metadata) == [
        "notebook", "metadata"]
    assert "drop_text_representation_metadata(" in inspect.getsource(jupytext.jupytext.writes)


def test_converter_dispatches_whole_text_formats_by_format_name() -> None:
    converter = jupytext.jupytext.TextNotebookConverter
    reads = inspect.getsource(inspect.unwrap(converter.reads))
    writes = inspect.getsource(inspect.unwrap(converter.writes))
    assert params(converter.reads)[:2] == ["self", "s"]
    assert params(converter.writes)[:3] == ["self", "nb", "metadata"]
    # The place where jupytext hands the whole text to pandoc/quarto/myst is where we hook in.
    assert 'self.fmt.get("format_name") == "pandoc"' in reads
    assert 'self.fmt.get("format_name") == "pandoc"' in writes
    reads_src = inspect.getsource(jupytext.jupytext.reads)
    assert "guess_format(text, ext)" in reads_src
    assert "read_format_from_metadata(text, ext)" in reads_src


def test_registration_is_complete_and_idempotent() -> None:
    jupytext_format.register()
    jupytext_format.register()
    formats = jupytext.formats
    assert jupytext_format.is_registered()
    msg_exts = [f.extension for f in formats.JUPYTEXT_FORMATS if f.format_name == "msg"]
    # one for .md and one for each script extension of jupytext's table (.msg.py, ...) whose
    # comments run to the end of the line (not SAS's /* ... */)
    table = jupytext.languages._SCRIPT_EXTENSIONS
    ends = {e for e in table if not table[e].get("comment_suffix")}
    assert sorted(msg_exts) == sorted({".md", *ends})
    assert ".sas" not in msg_exts and ".py" in msg_exts
    assert formats.get_format_implementation(".py").format_name != "msg"
    assert formats.get_format_implementation(".py", "msg").format_name == "msg"
    assert formats.long_form_one_format(".msg.py") == {
        "suffix": ".msg", "extension": ".py", "format_name": "msg"}
    assert formats.get_format_implementation(".md").format_name == "markdown"
    assert formats.get_format_implementation(".md", "msg").format_name == "msg"
    assert formats.long_form_one_format(".msg.md") == {
        "suffix": ".msg",
        "extension": ".md",
        "format_name": "msg",
    }
    assert formats.long_form_one_format("md:msg")["format_name"] == "msg"
    assert formats.short_form_one_format(formats.long_form_one_format(".msg.md")) == ".msg.md"
    # Modules that imported the functions by name see the patched ones.
    assert jupytext.guess_format is formats.guess_format
    assert jupytext.jupytext.guess_format is formats.guess_format
    assert jupytext.read is jupytext.jupytext.read


def test_guess_format_by_content_and_by_path() -> None:
    guess = jupytext.formats.guess_format
    assert guess("## %% Hello[^a]\n\nHi\n", ".md") == ("msg", {})
    assert guess("---\nmessage_section: Discussion\n---\n\n# Doc\n", ".md") == ("msg", {})
    assert guess("# Title\n\n```python\n# %% not a heading\n```\n", ".md")[0] == "markdown"
    assert guess("", ".md")[0] == "markdown"
    with jupytext_format.path_hint("chat.msg.md"):
        assert guess("", ".md") == ("msg", {})
    assert guess("## %% x\n", ".py")[0] != "msg"


def test_messages_false_is_plain_markdown_whatever_its_headings_say() -> None:
    """The same detector as the format core and tce (format.message_section): a front matter
    that says messages: false makes a .md plain Markdown, even with a "# %%" line in it."""
    guess = jupytext.formats.guess_format
    text = "---\nmessages: false\n---\n\n# Notes\n\n# %% a heading of the prose\n"
    assert guess(text, ".md")[0] == "markdown"
    assert guess(text.replace("false", "true"), ".md") == ("msg", {})
    assert guess("---\nmessages: yes # on\n---\n\n# Doc\n", ".md") == ("msg", {})


def test_a_message_file_read_through_jupytext_is_notebook_nodes_all_the_way_down() -> None:
    """jupytext, the contents manager and nbformat use attribute access (``nb.cells``,
    ``cell.metadata``, ``output.data``) at every level: the notebook jupytext reads from a
    message file equals ``nbformat.from_dict`` of the core's, node types included."""
    import nbformat

    from jupyter_percent_agent import format as core

    text = ("---\nagents:\n  a: {models: [m]}\n---\n\n# %% Q[^m1]\n[^m1]: [markdown] k=\"v\"\n\n"
            "Hi?\n\n## %%%[^m1.1]\n[^m1.1]: [a] tokens_in=3\n\nHello.\n\n"
            "# %% Code[^c1]\n[^c1]: [code]\n\n```python\nprint(1)\n```\n\n"
            "## %%%[^c1.1]\n[^c1.1]: [python]\n\nstdout> 1\n")
    nb = jupytext.reads(text, fmt="msg.md")
    expected = nbformat.from_dict(core.reads(text, path="x.msg.md"))

    def shape(obj: object) -> object:
        if isinstance(obj, dict):
            return type(obj).__name__, {k: shape(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [shape(v) for v in obj]
        return obj

    assert shape(nb.cells) == shape(expected.cells)  # jupytext adds its own metadata
    assert type(nb.metadata) is type(expected.metadata)
    assert nb.cells[1].outputs[0].metadata is nb["cells"][1]["outputs"][0]["metadata"]
