"""ATTP, the TOML tool-use protocol: the system prompt and the reply parser.

See ``docs/attp.md``. The model replies with a TOML document: a ``[tool_call]`` table with
``status = "success"`` and Python ``code`` (:class:`ToolCall`), ``status = "fail"`` and a
``message`` (:class:`Refusal`), or an ``answer`` (:class:`FinalAnswer`), which may carry a
``[proposed_code]`` table: code for the user to run in their notebook (:class:`ProposedCode`).
"""

from ._prompt import (
    ALLOWED_MODULES,
    ANSWER_TEMPLATE,
    FAIL_TEMPLATE,
    SUCCESS_TEMPLATE,
    system_prompt,
)
from ._reply import (
    ATTPError,
    FinalAnswer,
    ProposedCode,
    Refusal,
    Reply,
    ToolCall,
    format_reply,
    parse_reply,
)

__all__ = [
    "ALLOWED_MODULES",
    "ANSWER_TEMPLATE",
    "FAIL_TEMPLATE",
    "SUCCESS_TEMPLATE",
    "ATTPError",
    "FinalAnswer",
    "ProposedCode",
    "Refusal",
    "Reply",
    "ToolCall",
    "format_reply",
    "parse_reply",
    "system_prompt",
]
