"""``jupytext --execute`` runs a message file on the agent kernel, as JupyterLab opens it.

A message file may name any kernelspec in its ``jupyter:`` entry (a file shared as
``{"kernelspec": {"name": "python3"}}``), and jupytext executes a notebook on the kernel its
metadata names, sending it every cell's source: a message cell's source is its text, so a
cloned file whose message is Python would run as the user, outside the sandbox and the trust
rules. So, for a message file (by its name, its ``msg`` format, or its content) and unless the
user picks a kernel (``--set-kernel``), the command executes it on the agent kernel, exactly as
if ``--set-kernel percent-agent`` had been given; and a notebook it writes from one in a folder
the user has not trusted (``--to ipynb``, a pair of ``--sync``), which nbconvert or papermill
would execute on the kernel it names, names the agent kernel (in a trusted folder the files
are the user's own, and a notebook converted to a message file and back keeps its kernel).
``--execute`` and ``--to`` leave the message file as it is; ``--sync`` (and ``--set-formats``)
write the agent kernel into it with its pairs.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any

_PATCHED = "__jupyter_percent_agent_execute__"


def _is_message_file(nb_file: str, args: Any, format_name: str) -> bool:
    from jupyter_percent_agent import format as fmt

    if (getattr(args, "input_format", None) or {}).get("format_name") == format_name:
        return True
    if nb_file == "-" or not os.path.isfile(nb_file):
        return False  # stdin is read by jupytext alone; its format decides (above)
    if fmt.is_message_path(nb_file) or fmt.is_script_path(nb_file):  # .msg.md, .msg.py...
        return True
    if not nb_file.lower().endswith(".md"):
        return False
    try:
        return fmt.is_message_text(fmt.read_text(nb_file))
    except (OSError, fmt.FormatError):
        return False  # jupytext's own read says what is wrong with it


def _makes_another_notebook(args: Any, format_name: str) -> bool:
    """Whether the command writes the message file as another notebook (``--to ipynb``,
    ``-o x.ipynb``, the pairs of ``--sync``), which a runner may then execute."""
    from jupyter_percent_agent import format as fmt

    output, to = getattr(args, "output", None), getattr(args, "output_format", None)
    if getattr(args, "sync", False):
        return True
    if output and output != "-":
        return not (fmt.is_message_path(output) or fmt.is_script_path(output))
    if isinstance(to, dict):  # jupytext's long form of --to
        return to.get("format_name") != format_name and not str(to.get("suffix")) == ".msg"
    return isinstance(to, str) and bool(to) and "msg" not in to.lower()


def _trusted(nb_file: str) -> bool:
    """Whether the folder of ``nb_file`` is one the user trusted (its files are theirs)."""
    from jupyter_percent_agent import trust

    return nb_file != "-" and trust.is_trusted(os.path.dirname(os.path.abspath(nb_file)))


def patch_execute(cli: ModuleType, format_name: str) -> None:
    """Make ``jupytext_single_file`` execute a message file on the agent kernel unless the
    user set a kernel (idempotent)."""
    single = cli.jupytext_single_file
    if getattr(single, _PATCHED, False):
        return

    @functools.wraps(single)
    def jupytext_single_file(nb_file: str, args: Any, *rest: Any, **kwargs: Any) -> Any:
        execute = getattr(args, "execute", False)
        converts = _makes_another_notebook(args, format_name) and not _trusted(nb_file)
        if getattr(args, "set_kernel", None) or not (execute or converts):
            return single(nb_file, args, *rest, **kwargs)
        if not _is_message_file(nb_file, args, format_name):
            return single(nb_file, args, *rest, **kwargs)
        from jupyter_percent_agent.format import DEFAULT_KERNELSPEC

        if execute:
            args.set_kernel = DEFAULT_KERNELSPEC["name"]
        saved = args.update_metadata
        # the notebook written (an .ipynb that nbconvert or papermill will run) names the agent
        # kernel, not the one the message file names
        args.update_metadata = {**(saved or {}), "kernelspec": dict(DEFAULT_KERNELSPEC)}
        try:
            return single(nb_file, args, *rest, **kwargs)
        finally:  # the next file of the same command is judged on its own
            args.set_kernel, args.update_metadata = None, saved

    setattr(jupytext_single_file, _PATCHED, True)
    cli.jupytext_single_file = jupytext_single_file
