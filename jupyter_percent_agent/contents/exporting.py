"""Exporting a message notebook from JupyterLab (File > Save and Export Notebook As, the
server's ``/nbconvert`` route): model output is never trusted HTML there either.

nbconvert's HTML exporters copy a notebook's Markdown and HTML outputs into the page as they
are (its own ``sanitize_html`` escapes even ``<p>``, so a reply would read as tags); a reply
carrying ``<script>`` or an ``onerror`` ran in whatever page the export became. The server
extension adds :class:`SanitizeMessageNotebooks` to the HTML exporters' preprocessors: in a
message notebook (the agent kernel's) every output's Markdown or HTML is rendered and cleaned
here with bleach (nbconvert's own cleaner) and an allowlist of tags, attributes and URL
schemes, and only types the templates escape or embed as images are kept; other notebooks
export as the user configured. nbconvert imports this module by name, only when it exports.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor

# What a rendered reply is made of: Markdown's elements, tables, a few inline ones.
TAGS = frozenset(
    "a abbr b blockquote br code del details div em h1 h2 h3 h4 h5 h6 hr i img kbd li ol p pre"
    " s span strong sub summary sup table tbody td th thead tr ul".split()
)
ATTRIBUTES = {
    "*": ["class", "title", "align"],
    "a": ["href", "title"],
    "img": ["src", "alt", "title", "width", "height"],
    "ol": ["start"],
}
PROTOCOLS = frozenset({"http", "https", "mailto", "data"})
# Output types the HTML templates escape (text) or embed as an image: kept as they are.
KEPT_TYPES = frozenset({"text/plain", "image/png", "image/jpeg", "image/gif", "image/webp"})


def _is_message_notebook(nb: Any) -> bool:
    from jupyter_percent_agent.format import DEFAULT_KERNELSPEC

    meta = nb.get("metadata") or {}
    kernelspec = meta.get("kernelspec") or {}
    return isinstance(kernelspec, dict) and kernelspec.get("name") == DEFAULT_KERNELSPEC["name"]


def clean_html(html: str) -> str:
    """``html`` with only the allowed tags, attributes and URL schemes (the rest stripped)."""
    import re

    import bleach

    # a script's or a style's text is no prose: gone with its tags
    html = re.sub(r"<(script|style)\b.*?</\1\s*>", "", html, flags=re.I | re.S)
    return bleach.clean(
        html, tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS, strip=True, strip_comments=True
    )


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


class SanitizeMessageNotebooks(Preprocessor):
    """Cleans the outputs of a message notebook's export (see the module's docstring)."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        if not _is_message_notebook(nb):
            return nb, resources
        from nbconvert.filters import markdown2html

        for cell in nb.get("cells") or []:
            for out in cell.get("outputs") or []:
                data = out.get("data")
                if not isinstance(data, dict):
                    continue
                kept = {k: v for k, v in data.items() if k in KEPT_TYPES}
                if "text/markdown" in data:
                    kept["text/html"] = clean_html(markdown2html(_text(data["text/markdown"])))
                elif "text/html" in data:
                    kept["text/html"] = clean_html(_text(data["text/html"]))
                out["data"] = kept
        return nb, resources
