"""One task document: Markdown with a YAML front matter, read into a ``TaskDocument``.

Pure: text in, a document and the problems found in it out (each naming the field and the
line). What needs the other documents of the folder (references, cycles, tool ids) is checked
in ``check``. The fields and their meaning: ``shared/design/TASKS.md`` and ``docs/tasks.md``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.tasks import paths, templates
from jupyter_percent_agent.tasks.safe_yaml import Key, YamlError, load_with_lines

TASK_TYPES = ("plan", "execute", "validate", "error_handler")
PLAN_TYPES = ("plan", "error_handler")
LLM = "LLM"
FIELDS = ("task_id", "task_type", "description", "agent", "tool", "input", "output",
          "output_format", "error_handling", "plan_steps", "tags", "domain")
OUTPUT_FORMATS = ("text", "json")
ON_FAILURE_KEYS = ("retry", "replan", "error_routing")

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Problem:
    """Something wrong in a SOP folder: the file (relative to the folder), field, line."""

    path: str
    field: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.field}: {self.message}" if self.field else \
            f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "field": self.field, "line": self.line,
                "message": self.message}


@dataclass(frozen=True)
class Parameter:
    """A tool parameter: ``value`` is a template (text), a JSONPath (``$...``, read from the
    context as a value) or a literal (a number, a list...)."""

    name: str
    value: Any
    line: int | None = None

    @property
    def is_path(self) -> bool:
        return isinstance(self.value, str) and self.value.strip().startswith("$")


@dataclass(frozen=True)
class OnFailure:
    retry: int = 0
    replan: bool = False
    routes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskDocument:
    """A task document as read. ``lines`` maps field paths (``"tool.tool_id"``) to lines."""

    task_id: str
    path: str
    task_type: str
    description: str = ""
    agent: str | None = None
    tool_id: str | None = None
    parameters: tuple[Parameter, ...] = ()
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    plan_steps: tuple[str, ...] = ()
    on_failure: OnFailure = field(default_factory=OnFailure)
    sections: dict[str, str] = field(default_factory=dict)
    section_lines: dict[str, int] = field(default_factory=dict)
    text: str = ""
    lines: dict[str, int] = field(default_factory=dict)
    output_format: str | None = None  # as declared (runner.result_format: as read)

    @property
    def is_plan(self) -> bool:
        return self.task_type in PLAN_TYPES

    @property
    def is_llm(self) -> bool:
        return self.tool_id == LLM

    def section(self, name: str) -> str | None:
        """The text of the ``## parameters.NAME`` section."""
        return self.sections.get(templates.SECTION_PREFIX + name)

    def line(self, name: str) -> int | None:
        return self.lines.get(name)


def task_id_of(rel_path: str) -> str:
    """``blog/generate_outline`` for ``blog/generate_outline.md``."""
    return rel_path[:-3] if rel_path.endswith(".md") else rel_path


def split_front_matter(text: str) -> tuple[str, int, str, int] | None:
    """(YAML, its first line, body, its first line) or ``None`` without a front matter."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]), 2, "\n".join(lines[i + 1:]), i + 2
    return None


def sections(body: str, first_line: int = 1,
             twice: list[tuple[str, int, int]] | None = None
             ) -> tuple[dict[str, str], dict[str, int]]:
    """``## NAME`` sections of a body: name -> text (up to the next ``##`` heading or one
    above it, trimmed) and name -> the line of its first text. Headings in fences do not
    count. A name given again is added to ``twice`` with the lines of both headings (the
    last one's text is kept)."""
    found: dict[str, list[str]] = {}
    starts: dict[str, int] = {}
    headings: dict[str, int] = {}
    current: str | None = None
    fence: str | None = None
    for i, line in enumerate(body.split("\n")):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
        elif fence is None:
            h = _HEADING.match(line)
            if h and len(h.group(1)) <= 2:
                current = h.group(2).strip() if len(h.group(1)) == 2 else None
                if current is not None:
                    if current in headings and twice is not None:
                        twice.append((current, headings[current], first_line + i))
                    headings[current] = first_line + i
                    found[current] = []
                    starts[current] = first_line + i + 1
                continue
        if current is not None:
            found[current].append(line)
    texts = {}
    for name, body_lines in found.items():
        while body_lines and not body_lines[0].strip():
            body_lines.pop(0)
            starts[name] += 1
        texts[name] = "\n".join(body_lines).strip()
    return texts, starts


class _Reader:
    """Collects problems while reading one document's fields."""

    def __init__(self, rel_path: str, lines: dict[Key, int], offset: int) -> None:
        self.path = rel_path
        self.key_lines = lines
        self.offset = offset
        self.problems: list[Problem] = []
        self.lines: dict[str, int] = {}

    def line(self, *key: Any) -> int | None:
        while key:
            if key in self.key_lines:
                return self.key_lines[key] + self.offset - 1
            key = key[:-1]
        return self.offset - 1 if self.offset > 1 else None

    def note(self, name: str, *key: Any) -> None:
        line = self.line(*key)
        if line is not None:
            self.lines[name] = line

    def problem(self, field_name: str, message: str, *key: Any) -> None:
        self.problems.append(Problem(self.path, field_name, self.line(*key), message))

    def text(self, data: dict[str, Any], key: str, default: str | None = None) -> str | None:
        value = data.get(key, default)
        if value is None or isinstance(value, str):
            return value
        self.problem(key, f"must be text, not {_kind(value)}", key)
        return default


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", bool: "true/false", int: "a number",
            float: "a number"}.get(type(value), type(value).__name__)


def parse_document(text: str, rel_path: str) -> tuple[TaskDocument | None, list[Problem]]:
    """Read one document; ``None`` (with the problems) when it is not one at all."""
    split = split_front_matter(text)
    if split is None:
        return None, [Problem(rel_path, "task_id", 1, "no YAML front matter (--- lines at "
                              "the top with task_id, task_type, ...)")]
    yaml_text, yaml_line, body, body_line = split
    try:
        data, key_lines = load_with_lines(yaml_text)
    except YamlError as exc:
        line = exc.line + yaml_line - 1 if exc.line else yaml_line - 1
        return None, [Problem(rel_path, "front matter", line, exc.message)]
    if not isinstance(data, dict):
        return None, [Problem(rel_path, "front matter", 1,
                              f"must be a mapping of fields, not {_kind(data)}")]
    r = _Reader(rel_path, key_lines, yaml_line)
    for key in data:
        r.note(str(key), key)
        if key not in FIELDS:
            r.problem(str(key), "unknown field (known: " + ", ".join(FIELDS) + ")", key)
    expected = task_id_of(rel_path)
    task_id = r.text(data, "task_id")
    if task_id is None:
        r.problem("task_id", f"missing (it is the path without .md: {expected})")
    elif task_id != expected:
        r.problem("task_id", f"{task_id!r} does not match the file's path (expected "
                  f"{expected!r}: a task_id is the path under the SOP folder without .md)",
                  "task_id")
    task_type = r.text(data, "task_type")
    if task_type is None:
        r.problem("task_type", "missing (one of " + ", ".join(TASK_TYPES) + ")")
    elif task_type not in TASK_TYPES:
        r.problem("task_type", f"unknown task_type {task_type!r} (one of "
                  + ", ".join(TASK_TYPES) + ")", "task_type")
    twice: list[tuple[str, int, int]] = []
    secs, sec_lines = sections(body, body_line, twice)
    for name, first, again in twice:  # one text would be silently dropped
        r.problems.append(Problem(r.path, f"## {name}", again,
                                  f"given twice (lines {first} and {again}): one section each"))
    agent = r.text(data, "agent")
    tool_id, params = _tool(r, data, secs)
    inputs = _inputs(r, data)
    outputs = _outputs(r, data)
    steps = _plan_steps(r, data)
    on_failure = _on_failure(r, data)
    if (out_format := r.text(data, "output_format")) not in (None, *OUTPUT_FORMATS):
        r.problem("output_format", f"{out_format!r} is not text or json", "output_format")
    kind = task_type if task_type in TASK_TYPES else None
    if kind in PLAN_TYPES:
        if not steps and "plan_steps" not in data:
            r.problem("plan_steps", "a plan needs plan_steps: [{task_id: ...}, ...]")
        for name in ("tool", "input", "output", "output_format", "error_handling", "agent"):
            if name in data:
                r.problem(name, f"has no effect on a {kind} (only plan_steps do)", name)
    elif kind in ("execute", "validate"):
        if "plan_steps" in data:
            r.problem("plan_steps", f"a {kind} document has no plan_steps (make it a plan)",
                      "plan_steps")
        if tool_id is None and "tool" not in data:
            if secs.get("parameters.prompt") is None:
                r.problem("tool", "no tool, and no '## parameters.prompt' section for the LLM")
            else:
                tool_id = LLM
    doc = TaskDocument(
        task_id=expected, path=rel_path,
        task_type=task_type or "", description=r.text(data, "description", "") or "",
        agent=agent, tool_id=tool_id, parameters=tuple(params), inputs=inputs,
        outputs=outputs, plan_steps=tuple(steps), on_failure=on_failure, sections=secs,
        section_lines=sec_lines, text=text, lines=r.lines,
        output_format=out_format if out_format in OUTPUT_FORMATS else None)
    if kind in ("execute", "validate"):
        r.problems.extend(template_problems(doc))
    return doc, r.problems


def _tool(r: _Reader, data: dict[str, Any], secs: dict[str, str]
          ) -> tuple[str | None, list[Parameter]]:
    tool = data.get("tool")
    if tool is None:
        return None, []
    if not isinstance(tool, dict):
        r.problem("tool", f"must be a mapping (tool_id, parameters), not {_kind(tool)}", "tool")
        return None, []
    for key in tool:
        if key not in ("tool_id", "parameters"):
            r.problem(f"tool.{key}", "unknown field (known: tool_id, parameters)", "tool", key)
    tool_id = tool.get("tool_id")
    r.note("tool.tool_id", "tool", "tool_id")
    if not isinstance(tool_id, str) or not tool_id.strip():
        r.problem("tool.tool_id", "missing (LLM, or the name of a tool)", "tool", "tool_id")
        tool_id = None
    params: list[Parameter] = []
    raw = tool.get("parameters") or []
    if not isinstance(raw, list):
        r.problem("tool.parameters", "must be a list of {name, value}", "tool", "parameters")
        raw = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = ("tool", "parameters", i)
        line = r.line(*where)
        if not isinstance(item, dict) or "name" not in item or "value" not in item \
                or set(item) - {"name", "value"}:
            r.problem(f"tool.parameters[{i}]", "must be {name: ..., value: ...}", *where)
            continue
        name = item["name"]
        if not isinstance(name, str) or not name.isidentifier():
            r.problem(f"tool.parameters[{i}].name",
                      f"{name!r} is not a parameter name (a Python identifier)", *where)
            continue
        if name in seen:
            r.problem(f"tool.parameters[{i}].name", f"parameter {name!r} is given twice", *where)
        seen.add(name)
        param = Parameter(name, item["value"], line)
        problem = paths.path_problem(param.value) if param.is_path else None
        if problem:  # read as a JSONPath when the step runs: it must parse
            r.problem(f"tool.parameters.{name}", problem, *where, "value")
        params.append(param)
    if tool_id == "LLM":
        names = [p.name for p in params]
        for p in params:
            if p.name != "prompt":
                r.problem(f"tool.parameters.{p.name}", "the LLM takes one parameter, prompt",
                          "tool", "parameters")
        if "prompt" not in names and "parameters.prompt" not in secs:
            r.problem("tool.parameters", "the LLM needs a prompt parameter (or a "
                      "'## parameters.prompt' section)", "tool")
    return tool_id, params


def _mapping(r: _Reader, data: dict[str, Any], name: str) -> dict[Any, Any]:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        r.problem(name, f"must be a mapping, not {_kind(value)}", name)
        return {}
    return value


def _inputs(r: _Reader, data: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for var, path in _mapping(r, data, "input").items():
        where = ("input", var)
        r.note(f"input.{var}", *where)
        if not isinstance(var, str) or not var.isidentifier() or var == "parameters":
            r.problem(f"input.{var}", f"{var!r} cannot be a variable name (a name like "
                      "title or 标题, not 'parameters')", *where)
            continue
        problem = paths.path_problem(path)
        if problem:
            r.problem(f"input.{var}", problem, *where)
            continue
        out[var] = path
    return out


def _outputs(r: _Reader, data: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for target, source in _mapping(r, data, "output").items():
        where = ("output", target)
        r.note(f"output.{target}", *where)
        problem = paths.target_problem(target) or paths.path_problem(source)
        if problem:
            r.problem(f"output.{target}", problem, *where)
            continue
        out[target] = source
    return out


def _plan_steps(r: _Reader, data: dict[str, Any]) -> list[str]:
    raw = data.get("plan_steps")
    if raw is None:
        return []
    if not isinstance(raw, list):
        r.problem("plan_steps", "must be a list of {task_id: ...}", "plan_steps")
        return []
    steps = []
    for i, item in enumerate(raw):
        value = item.get("task_id") if isinstance(item, dict) and set(item) == {"task_id"} \
            else item
        if not isinstance(value, str) or not value.strip():
            r.problem(f"plan_steps[{i}]", "must be {task_id: ...}", "plan_steps", i)
            continue
        r.note(f"plan_steps[{i}]", "plan_steps", i)
        steps.append(value.strip())
    return steps


def _on_failure(r: _Reader, data: dict[str, Any]) -> OnFailure:
    handling = _mapping(r, data, "error_handling")
    for key in handling:
        if key != "on_failure":
            r.problem(f"error_handling.{key}", "unknown field (known: on_failure)",
                      "error_handling", key)
    raw = handling.get("on_failure") or {}
    if not isinstance(raw, dict):
        r.problem("error_handling.on_failure", "must be a mapping (retry, replan, "
                  "error_routing)", "error_handling", "on_failure")
        return OnFailure()
    base = ("error_handling", "on_failure")
    for key in raw:
        if key not in ON_FAILURE_KEYS:
            r.problem(f"error_handling.on_failure.{key}", "unknown field (known: "
                      + ", ".join(ON_FAILURE_KEYS) + ")", *base, key)
    retry = raw.get("retry", 0)
    if not isinstance(retry, int) or isinstance(retry, bool) or retry < 0:
        r.problem("error_handling.on_failure.retry", f"must be a whole number >= 0, not "
                  f"{retry!r}", *base, "retry")
        retry = 0
    replan = raw.get("replan", False)
    if not isinstance(replan, bool):
        r.problem("error_handling.on_failure.replan", f"must be true or false, not {replan!r}",
                  *base, "replan")
        replan = False
    routes: dict[str, str] = {}
    raw_routes = raw.get("error_routing") or {}
    if not isinstance(raw_routes, dict):
        r.problem("error_handling.on_failure.error_routing", "must map error types to "
                  "handler task_ids", *base, "error_routing")
        raw_routes = {}
    for etype, target in raw_routes.items():
        where = (*base, "error_routing", etype)
        r.note(f"error_routing.{etype}", *where)
        if not isinstance(target, str) or not target.strip():
            r.problem(f"error_handling.on_failure.error_routing.{etype}",
                      "must be the task_id of a handler", *where)
            continue
        routes[str(etype)] = target.strip()
    return OnFailure(retry=retry, replan=replan, routes=routes)


def template_problems(doc: TaskDocument) -> list[Problem]:
    """Placeholders that are neither an input nor a section, and braces that are wrong, in
    the parameter values and the ``parameters.*`` sections."""
    out: list[Problem] = []
    for p in doc.parameters:
        if isinstance(p.value, str) and not p.is_path:
            out.extend(_check_template(doc, p.value, f"tool.parameters.{p.name}", p.line,
                                       allow_sections=True, same_line=True))
    for name, text in doc.sections.items():
        if name.startswith(templates.SECTION_PREFIX):
            out.extend(_check_template(doc, text, f"## {name}", doc.section_lines.get(name),
                                       allow_sections=False, same_line=False))
    return out


def _check_template(doc: TaskDocument, text: str, where: str, line: int | None, *,
                    allow_sections: bool, same_line: bool) -> list[Problem]:
    found, problems = templates.scan(text)
    out = [Problem(doc.path, where, _at(line, p.line, same_line), p.message) for p in problems]
    for ph in found:
        section = ph.section
        if section is not None:
            if not allow_sections:
                msg = (f"{{{ph.text}}}: a section cannot include another section; "
                       "use it from the tool's parameters")
            elif doc.section(section) is None:
                msg = (f"{{{ph.text}}} names no section: there is no "
                       f"'## parameters.{section}' in the body")
            else:
                continue
        elif ph.text in doc.inputs:
            continue
        else:
            known = ", ".join(doc.inputs) or "none"
            msg = (f"{{{ph.text}}} is neither an input (input: {known}) nor a section "
                   "({parameters.NAME})")
        out.append(Problem(doc.path, where, _at(line, ph.line, same_line), msg))
    return out


def _at(line: int | None, offset: int, same_line: bool) -> int | None:
    if line is None:
        return None
    return line if same_line else line + offset


SKIPPED_NAMES = ("readme.md",)


def document_files(root: Path) -> list[Path]:
    """The task documents under ``root`` (the one rule, for running and for the index):
    ``*.md`` files, less message files (``*.msg.md``, any case), READMEs and anything under a
    name starting with ``.`` or ``_``; sorted by folder, then name."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if (name.lower().endswith(".md") and not fmt.is_message_path(name)
                    and not name.startswith((".", "_")) and name.lower() not in SKIPPED_NAMES):
                out.append(Path(dirpath) / name)
    return out
