"""Size and count caps shared by the parent and the sandbox child.

Every number a hostile child could use to hurt the parent is bounded here: frame sizes, the
number of tool calls, argument and result sizes, captured output.
"""

from __future__ import annotations

MAX_CODE_CHARS = 200_000
"""Longest code accepted by ``execute``."""

MAX_OUTPUT_CHARS = 200_000
"""Captured ``print`` output; the run ends with status ``output_limit`` beyond it."""

MAX_RESULT_BYTES = 1_000_000
"""JSON text of ``__result__``; a larger result ends the run with ``output_limit``."""

MAX_TOOL_CALLS = 256
"""Tool calls per run; the next one ends the run with an error."""

MAX_TOOL_ARGS_BYTES = 256_000
"""JSON size of one tool call's arguments (checked in the parent)."""

MAX_TOOL_REPLY_BYTES = 4_000_000
"""JSON size of one tool result sent back into the sandbox."""

MAX_FRAME_BYTES = 4 * MAX_RESULT_BYTES + 2 * MAX_OUTPUT_CHARS * 4
"""Any frame the parent accepts from the child (result plus output plus margin)."""

MAX_PENDING_FRAMES = 8
"""A well-behaved child waits for each reply; more queued frames is a protocol violation."""

MAX_ERROR_CHARS = 4_000
"""Error messages (from the sandbox or from tools) are cut to this length."""

STARTUP_TIMEOUT = 30.0
"""Seconds a fresh worker may take to report ready (not counted in the run's wall clock)."""
