"""How a run streams to the terminal (``tce chat``, ``tce exec``): reply text and a code
cell's stdout on standard output; tool steps, notes and a code cell's stderr on standard
error."""

from __future__ import annotations

import sys
from typing import Any

import click


class Printer:
    """Streams a run to the terminal: reply text on stdout, tool steps and notes on stderr."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tool_mode = False
        self.wrote = False
        self.received = False  # any reply text came (shown or not): Ctrl-C keeps it

    def __call__(self, event: Any) -> None:
        from jupyter_percent_agent import format as fmt
        from jupyter_percent_agent.runtime import events as ev

        if isinstance(event, ev.Delta | ev.OutputMade):
            self.received = True
        if self.quiet:
            return
        match event:
            case ev.Step():
                self.tool_mode = True
            case ev.Delta(text=text):
                stream = sys.stderr if self.tool_mode else sys.stdout
                stream.write(fmt.escape_surrogates(text))
                stream.flush()
                self.wrote = not self.tool_mode or self.wrote
            case ev.Reasoning(text=text):  # a reasoning model's thinking: shown, not the answer
                sys.stderr.write(fmt.escape_surrogates(text))
                sys.stderr.flush()
            case ev.Retry(reason=reason):
                click.echo(f"\n[{reason}]", err=True)
            case ev.Status(line=line):
                click.echo(f"[{line}]", err=True)
            case ev.Chunk(tool=tool, data=data):
                click.echo(f"[{tool}] {data}", err=True)
            case ev.CodeText(name=name, text=text):  # a code cell printing, as it prints
                stream = sys.stderr if name == "stderr" else sys.stdout
                stream.write(fmt.escape_surrogates(text))
                stream.flush()
            case ev.OutputMade(output=out) if self.tool_mode:
                kind = fmt.output_kind(out)
                if kind in ("tool_call", "tool_result"):
                    attrs = fmt.output_attrs(out)
                    label = attrs.get("name") or attrs.get("status") or ""
                    click.echo(f"\n--- {kind} {label} ---\n{fmt.output_text(out)}", err=True)
