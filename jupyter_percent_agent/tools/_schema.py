"""The ``parameters`` of a ``[tool]`` cell (a JSON Schema) and the arguments of a call to it.

A small subset of JSON Schema, with no dependency (the sandbox worker imports this module too,
so it uses the standard library only): the schema describes an object (``type``,
``properties``, ``required``, ``additionalProperties``); a call's arguments are checked for the
required keys, for unknown keys when ``additionalProperties`` is false, and for each property's
``type`` (a JSON type name or a list of them) and ``enum``. Nested schemas are not checked.
Pure functions: each returns what is wrong as one sentence, or ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JSON_TYPES: dict[str, str] = {
    "string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list",
    "object": "dict", "null": "None",
}  # fmt: skip
"""JSON Schema type names and the Python type each is shown as in a tool's signature."""


def schema_problem(schema: Any) -> str | None:
    """What is wrong with ``schema`` as a tool's ``parameters``, or ``None``."""
    if not isinstance(schema, Mapping):
        return "parameters must be a JSON object (a JSON Schema of the arguments)"
    if schema.get("type", "object") != "object":
        return f'parameters must have "type": "object", not {schema.get("type")!r}'
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping) or not all(
        isinstance(p, Mapping) for p in properties.values()
    ):
        return 'parameters: "properties" must map each argument name to a schema object'
    for name, prop in properties.items():
        names = type_names(prop)
        if names is None or any(n not in JSON_TYPES for n in names):
            return (
                f"parameters: argument {name!r} has type {prop.get('type')!r}; JSON Schema "
                f"types are {', '.join(JSON_TYPES)}"
            )
        if "enum" in prop and not isinstance(prop["enum"], list):
            return f'parameters: "enum" of argument {name!r} must be a list'
        if not isinstance(prop.get("description", ""), str):
            return f'parameters: "description" of argument {name!r} must be a string'
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return 'parameters: "required" must be a list of argument names'
    unknown = [r for r in required if r not in properties]
    if unknown:
        return f'parameters: "required" names {_names(unknown)}, not in "properties"'
    if not isinstance(schema.get("additionalProperties", True), bool | Mapping):
        return 'parameters: "additionalProperties" must be true, false or a schema'
    return None


def arguments_problem(args: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """What is wrong with the keyword arguments ``args`` for a (valid) ``schema``, or ``None``."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [r for r in schema.get("required", []) if r not in args]
    if missing:
        return f"missing required argument{'s' if len(missing) > 1 else ''} {_names(missing)}"
    if schema.get("additionalProperties", True) is False:
        extra = [k for k in args if k not in properties]
        if extra:
            return f"unexpected argument{'s' if len(extra) > 1 else ''} {_names(extra)}"
    for key, value in args.items():
        prop = properties.get(key)
        if prop is None:
            continue
        names = type_names(prop) or []
        if names and not any(_is_a(value, n) for n in names):
            return f"argument {key!r} must be {' or '.join(names)}, not {json_type(value)}"
        if "enum" in prop and not any(_same(value, e) for e in prop["enum"]):
            choices = ", ".join(repr(e) for e in prop["enum"])
            return f"argument {key!r} must be one of {choices}, not {value!r}"
    return None


def type_names(prop: Mapping[str, Any]) -> list[str] | None:
    """The JSON type names a property allows (``[]`` when it says nothing; ``None`` if odd)."""
    kind = prop.get("type")
    if kind is None:
        return []
    names = kind if isinstance(kind, list) else [kind]
    return names if names and all(isinstance(n, str) for n in names) else None


def json_type(value: Any) -> str:
    """The JSON Schema type name of a JSON value (``"object"`` for a dict, ...)."""
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _is_a(value, name, strict=True):
            return name
    return type(value).__name__


def _is_a(value: Any, name: str, *, strict: bool = False) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if name == "integer":  # JSON Schema: 1.0 is an integer
        return isinstance(value, int) or (
            not strict and isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, int | float)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "object":
        return isinstance(value, Mapping)
    return False


def _same(value: Any, choice: Any) -> bool:
    return value == choice and isinstance(value, bool) == isinstance(choice, bool)


def _names(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)
