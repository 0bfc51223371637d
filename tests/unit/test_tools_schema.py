"""The parameters of a [tool] cell (a small JSON Schema subset) and the arguments of a call."""

from __future__ import annotations

import pytest

from jupyter_percent_agent.tools import arguments_problem, schema_problem

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "a city"},
        "days": {"type": "integer"},
        "scale": {"type": ["number", "null"]},
        "unit": {"enum": ["c", "f"]},
        "flags": {"type": "array"},
        "extra": {"type": "object"},
        "exact": {"type": "boolean"},
    },
    "required": ["city"],
}


@pytest.mark.parametrize(
    "args",
    [{"city": "Oslo"},
     {"city": "Oslo", "days": 3, "scale": None, "unit": "f", "flags": [], "extra": {"a": 1},
      "exact": False},
     {"city": "Oslo", "days": 2.0, "scale": 1},  # 2.0 is an integer in JSON Schema
     {"city": "Oslo", "anything": object()}],  # unknown keys pass unless refused
)  # fmt: skip
def test_arguments_that_fit(args: dict) -> None:
    assert schema_problem(SCHEMA) is None
    assert arguments_problem(args, SCHEMA) is None


@pytest.mark.parametrize(
    ("args", "problem"),
    [({}, "missing required argument 'city'"),
     ({"city": 1}, "argument 'city' must be string, not integer"),
     ({"city": "x", "days": True}, "argument 'days' must be integer, not boolean"),
     ({"city": "x", "days": 1.5}, "argument 'days' must be integer, not number"),
     ({"city": "x", "scale": "big"}, "argument 'scale' must be number or null, not string"),
     ({"city": "x", "unit": "k"}, "argument 'unit' must be one of 'c', 'f', not 'k'"),
     ({"city": "x", "exact": 1}, "argument 'exact' must be boolean, not integer"),
     ({"city": "x", "flags": {}}, "argument 'flags' must be array, not object")],
)  # fmt: skip
def test_arguments_that_do_not_fit_say_which_and_why(args: dict, problem: str) -> None:
    assert arguments_problem(args, SCHEMA) == problem


def test_additional_properties_false_refuses_unknown_keys() -> None:
    closed = {**SCHEMA, "additionalProperties": False}
    assert schema_problem(closed) is None
    assert arguments_problem({"city": "x", "town": 1, "zip": 2}, closed) == (
        "unexpected arguments 'town', 'zip'"
    )
    assert arguments_problem({"city": "x"}, closed) is None
    assert arguments_problem({"unit": True}, {"properties": {"unit": {"enum": [1]}}}) == (
        "argument 'unit' must be one of 1, not True"
    )


@pytest.mark.parametrize(
    ("schema", "problem"),
    [([], "parameters must be a JSON object"),
     ({"type": "string"}, "parameters must have \"type\": \"object\", not 'string'"),
     ({"properties": []}, '"properties" must map each argument name to a schema object'),
     ({"properties": {"a": 1}}, '"properties" must map each argument name'),
     ({"properties": {"a": {"type": "text"}}}, "argument 'a' has type 'text'"),
     ({"properties": {"a": {"type": []}}}, "argument 'a' has type []"),
     ({"properties": {"a": {"enum": "x"}}}, '"enum" of argument \'a\' must be a list'),
     ({"properties": {"a": {"description": 3}}}, '"description" of argument \'a\''),
     ({"required": "a"}, '"required" must be a list of argument names'),
     ({"properties": {}, "required": ["a"]}, '"required" names \'a\', not in "properties"'),
     ({"additionalProperties": "no"}, '"additionalProperties" must be true, false or a schema')],
)  # fmt: skip
def test_a_malformed_schema_says_what_is_wrong(schema: object, problem: str) -> None:
    found = schema_problem(schema)
    assert found is not None and problem in found
