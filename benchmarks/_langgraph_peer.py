"""The peer of bench_tasks: the same workflow as a LangGraph ``StateGraph``.

draft -> review (an LLM validator answering in TOML; the first draft fails and is redone once
with the review's message) -> final, over every line of a JSONL file, at most N at once, each
node making the same litellm call the runtime makes (streamed, usage included). Run as
``python benchmarks/_langgraph_peer.py API_BASE INPUTS.jsonl CONCURRENCY [ROUNDS]``; prints one
JSON line: the runs of the last round that succeeded and each round's seconds (imports
excluded; later rounds are warm).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import tomllib
from typing import Any, TypedDict

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from langgraph.graph import END, START, StateGraph

VERDICT_FORM = (
    "\n\n---\nAnswer with your verdict only, in TOML:\n\n```toml\n"
    'status = "pass"        # or "fail"\nerror_type = ""        # when it fails: a short name '
    'for what is wrong\nmessage = """"""       # when it fails: what is wrong and how to fix '
    "it\n```\nerror_type names the kind of failure.")


class State(TypedDict, total=False):
    topic: str
    draft: str
    review: dict[str, Any]
    final: str
    feedback: str
    attempts: int


def make_graph(api_base: str) -> Any:
    async def call(prompt: str) -> str:
        response = await litellm.acompletion(
            model="openai/test-model", messages=[{"role": "user", "content": prompt}],
            api_base=api_base, api_key="no-key", stream=True,
            stream_options={"include_usage": True}, timeout=120, max_retries=0,
            num_retries=0)
        text = ""
        async for chunk in response:
            for choice in chunk.choices or []:
                if choice.delta.content:
                    text += choice.delta.content
        return text

    async def draft(state: State) -> State:
        prompt = f"DRAFT a short text about {state['topic']}."
        if state.get("feedback"):
            prompt += "\n\n---\nFeedback on the previous attempt (fix this):\n" + \
                state["feedback"]
        return {"draft": await call(prompt)}

    async def review(state: State) -> State:
        reply = await call(f"REVIEW this draft: {state['draft']}" + VERDICT_FORM)
        try:
            verdict = tomllib.loads(reply)
        except tomllib.TOMLDecodeError:
            verdict = {"status": "fail", "error_type": "invalid_verdict", "message": reply}
        return {"review": verdict, "attempts": state.get("attempts", 0) + 1,
                "feedback": str(verdict.get("message") or "")}

    def route(state: State) -> str:
        if state["review"].get("status") == "pass":
            return "final"
        return "draft" if state["attempts"] <= 1 else END

    async def final(state: State) -> State:
        return {"final": await call(f"FINAL version of: {state['draft']}")}

    graph = StateGraph(State)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_node("final", final)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_conditional_edges("review", route, ["draft", "final", END])
    graph.add_edge("final", END)
    return graph.compile()


async def run_all(app: Any, topics: list[dict[str, Any]], concurrency: int) -> int:
    gate = asyncio.Semaphore(concurrency)

    async def one(context: dict[str, Any]) -> bool:
        async with gate:
            try:
                state = await app.ainvoke(dict(context))
            except Exception:
                return False
        return "final" in state

    return sum(await asyncio.gather(*(one(t) for t in topics)))


def main() -> None:
    api_base, inputs, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    with open(inputs, encoding="utf-8") as f:
        topics = [json.loads(line) for line in f if line.strip()]
    app = make_graph(api_base)
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        ok = asyncio.run(run_all(app, topics, concurrency))
        seconds.append(time.perf_counter() - started)
    print(json.dumps({"succeeded": ok, "seconds": seconds}))


if __name__ == "__main__":
    main()
