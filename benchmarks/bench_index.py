"""The SOP index: paraphrase recall against BM25 (bm25s), and its speed, in one run.

Quality: recall@3 of the 63 paraphrased queries of ``tests/data/index/queries.json`` over the
52 documents of ``tests/data/index/sop`` (half Chinese). Ours: FTS5 terms fused with
wordllama's bundled embeddings (``Index.search``). Peer: ``bm25s`` over the same texts (the
document's id, description and sections), once with its own tokenizer and once with ours
(Chinese bigrams), the stronger of the two being the one to beat. Also shown: each half of
ours alone, reciprocal rank fusion instead of ours, the lexical weight's range, the queries
that share no term with their target, and tool selection on the 40-tool toolbox.

Speed, on 1,000 generated documents: build the index, update it after one edit, search in
process (median), and a cold ``tce sop search`` command (median of fresh processes).
Targets: recall@3 >= 0.85 and above BM25; build <= 10 s; update <= 0.5 s; search <= 20 ms;
cold command <= 0.5 s.

Run: ``.venv/bin/python -m benchmarks.bench_index`` (needs ``pip install bm25s``).
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._timing import median_seconds, print_table

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "index"
N_DOCS = 1_000
TARGETS = {"recall": 0.85, "build": 10.0, "update": 0.5, "search": 0.020, "cold": 0.5}


# -- quality ----------------------------------------------------------------------------------

def recall_at(ranker: Callable[[str], list[str]], queries: list[dict], k: int = 3) -> float:
    return sum(q["task_id"] in ranker(q["query"])[:k] for q in queries) / len(queries)


def bm25s_ranker(docs: list, tokenize: Callable[[str], list[str]] | None) -> Callable:
    import bm25s

    from jupyter_percent_agent.tasks.index import embed_text

    ids = [d.task_id for d in docs]
    texts = [embed_text(d) for d in docs]
    if tokenize is None:
        corpus = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    else:
        corpus = [tokenize(t) for t in texts]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)

    def rank(query: str) -> list[str]:
        if tokenize is None:
            q = bm25s.tokenize([query], stopwords="en", show_progress=False)
        else:
            q = [tokenize(query) or ["_"]]
        found, _ = retriever.retrieve(q, k=len(ids), show_progress=False)
        return [ids[i] for i in found[0]]

    return rank


def rrf(lexical: dict[str, float], vector: dict[str, float], k: int = 60) -> list[str]:
    fused: dict[str, float] = {}
    for scores in (lexical, vector):
        for rank, key in enumerate(sorted(scores, key=lambda x: -scores[x]), 1):
            fused[key] = fused.get(key, 0.0) + 1 / (k + rank)
    return sorted(fused, key=lambda x: -fused[x])


def quality() -> dict[str, float]:
    from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder
    from jupyter_percent_agent.ranking.fusion import combine
    from jupyter_percent_agent.ranking.text import STOPWORDS, query_terms, terms
    from jupyter_percent_agent.tasks.index import Index, embed_text
    from jupyter_percent_agent.tasks.index_docs import read_folder

    queries = json.loads((DATA / "queries.json").read_text(encoding="utf-8"))
    docs = read_folder(DATA / "sop")[0]
    by_id = {d.task_id: d for d in docs}
    strict = [q for q in queries
              if not {t for t in terms(q["query"])[0] if t not in STOPWORDS}
              & set(terms(embed_text(by_id[q["task_id"]]))[0])]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sop"
        shutil.copytree(DATA / "sop", folder)
        ix = Index.open(folder, embedder=WordLlamaEmbedder())

        def by(scores: dict[str, float]) -> list[str]:
            return sorted(scores, key=lambda key: -scores[key])

        cache = {q["query"]: (ix.lexical_scores(q["query"]), ix.vector_scores(q["query"]))
                 for q in queries}
        ours = lambda q: [h.task_id for h in ix.search(q, 3)]  # noqa: E731
        rankers = {
            "ours: FTS5 + wordllama, z-score fusion": ours,
            "ours, vector half alone (wordllama)": lambda q: by(cache[q][1]),
            "ours, lexical half alone (FTS5, bigrams)": lambda q: by(cache[q][0]),
            "ours with reciprocal rank fusion": lambda q: rrf(*cache[q]),
            "bm25s, its tokenizer (peer)": bm25s_ranker(docs, None),
            "bm25s, our CJK-aware terms (peer)": bm25s_ranker(docs, query_terms),
        }
        rows, results = [], {}
        for name, ranker in rankers.items():
            results[name] = recall_at(ranker, queries)
            zh = [q for q in queries if any("\u4e00" <= c <= "\u9fff" for c in q["query"])]
            en = [q for q in queries if q not in zh]
            rows.append([name, results[name], recall_at(ranker, zh), recall_at(ranker, en),
                         recall_at(ranker, strict) if strict else "-"])
        ix.close()
    print_table(f"recall@3, {len(queries)} paraphrases over {len(docs)} documents",
                rows, ["ranking", "all", "Chinese", "English",
                       f"no shared term ({len(strict)})"])
    sweep = []
    for w in (0.0, 0.1, 0.2, 0.3, 0.5, 1.0):
        sweep.append([w, recall_at(lambda q, w=w: [t for t, _ in combine(*cache[q], w)],
                                   queries)])
    print_table("recall@3 by lexical weight (0.2 is ours)", sweep, ["weight", "recall@3"])
    return results


def tool_selection() -> None:
    from jupyter_percent_agent.ranking.tools import select_tools
    from jupyter_percent_agent.tools import Registry

    registry = Registry.load(DATA / "toolbox", entry_points=False)
    tools = {name: tool.doc.text for name, tool in registry.items()}
    messages = json.loads((DATA / "tool_messages.json").read_text(encoding="utf-8"))
    rows = []
    for limit in (3, 5, 8, 12):
        ok = [bool(set(m["tools"]) & set(select_tools(tools, m["message"], limit=limit)))
              for m in messages]
        seconds = median_seconds(lambda limit=limit: select_tools(
            tools, messages[0]["message"], limit=limit), repeat=15)
        rows.append([limit, sum(ok) / len(ok), f"{seconds * 1000:.1f} ms"])
    print_table(f"tool selection: {len(tools)} tools, {len(messages)} messages", rows,
                ["limit", "a right tool offered", "select_tools, median"])


# -- speed ------------------------------------------------------------------------------------

ZH = {"topics": ["报销", "合同", "招聘", "库存", "发票", "会议", "客服", "培训", "采购", "预算"],
      "verbs": ["审核", "起草", "汇总", "检查", "整理", "更新", "通知", "评估", "归档", "统计"],
      "extra": ["请逐项核对每一条记录，发现问题时写明原因。", "结果按部门汇总后发给负责人。",
                "如有缺失的材料，提醒相关同事在三天内补齐。", "注意保密，不要外发原始数据。"]}
EN = {"topics": ["invoice", "contract", "hiring", "inventory", "meeting", "ticket",
                 "training", "purchase", "budget", "release"],
      "verbs": ["review", "draft", "summarize", "check", "organize", "update", "notify",
                "assess", "archive", "count"],
      "extra": ["Go through every record and explain each problem you find.",
                "Group the results by department and send them to the owner.",
                "Remind colleagues to supply missing documents within three days.",
                "Keep the raw data confidential."]}


def generate(folder: Path, n: int = N_DOCS, seed: int = 7) -> list[str]:
    """``n`` documents in 20 domains, half Chinese: plans, execute and validate steps."""
    rnd = random.Random(seed)
    ids = []
    for i in range(n):
        lang = ZH if i % 2 else EN
        topic, verb = rnd.choice(lang["topics"]), rnd.choice(lang["verbs"])
        domain = f"domain{i % 20:02d}"
        task_id = f"{domain}/{'zh' if i % 2 else 'en'}_{i:04d}"
        kind = ("plan", "execute", "validate")[i % 3]
        desc = f"{verb}{topic}（第{i}号）" if i % 2 else f"{verb} the {topic} (number {i})"
        body = " ".join(rnd.sample(lang["extra"], 3))
        section = "Plan Details" if kind == "plan" else "parameters.prompt"
        path = folder / f"{task_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        tool = "" if kind == "plan" else "tool:\n  tool_id: LLM\n"
        path.write_text(f"---\ntask_id: {task_id}\ntask_type: {kind}\ndescription: {desc}\n"
                        f"{tool}---\n\n## {section}\n{desc}. {body}\n", encoding="utf-8")
        ids.append(task_id)
    return ids


def speed() -> dict[str, float]:
    from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder
    from jupyter_percent_agent.tasks.index import Index

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sop"
        ids = generate(folder)
        embedder = WordLlamaEmbedder()
        embedder.embed(["warm up"])  # the model's load is timed in the cold command
        start = time.perf_counter()
        ix = Index.open(folder, embedder=embedder)
        results["build"] = time.perf_counter() - start
        assert len(ix.task_ids()) == N_DOCS

        updates = []
        for n in range(5):
            doc = folder / f"{ids[n * 7]}.md"
            doc.write_text(doc.read_text(encoding="utf-8") + f"\nEdited {n}.\n", "utf-8")
            start = time.perf_counter()
            report = ix.update()
            updates.append(time.perf_counter() - start)
            assert report.changed == [ids[n * 7]] and report.embedded == 1
        results["update"] = statistics.median(updates)

        queries = ["check the budget figures", "审核报销单据", "draft a hiring contract",
                   "整理会议记录", "notify owners about missing documents"]
        ix.search(queries[0], 5)
        samples = []
        for _ in range(5):
            for q in queries:
                start = time.perf_counter()
                ix.search(q, 5)
                samples.append(time.perf_counter() - start)
        results["search"] = statistics.median(samples)
        ix.close()

        cmd = [sys.executable, "-c", "from jupyter_percent_agent.cli import main; main()",
               "sop", "search", "审核报销单据", "--sop", str(folder), "-k", "3"]
        subprocess.run(cmd, check=True, capture_output=True)
        results["cold"] = median_seconds(
            lambda: subprocess.run(cmd, check=True, capture_output=True), repeat=7, warmup=1)
        results["python"] = median_seconds(
            lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), repeat=7)
        results["bm25s_build"], results["bm25s_search"] = bm25s_speed(folder)
    return results


def bm25s_speed(folder: Path) -> tuple[float, float]:
    """The peer on the same 1,000 documents: index and one query (its tokenizer)."""
    import bm25s

    from jupyter_percent_agent.tasks.index import embed_text
    from jupyter_percent_agent.tasks.index_docs import read_folder

    start = time.perf_counter()
    docs = read_folder(folder)[0]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([embed_text(d) for d in docs], show_progress=False),
                    show_progress=False)
    build = time.perf_counter() - start
    search = median_seconds(lambda: retriever.retrieve(
        bm25s.tokenize(["check the budget figures"], show_progress=False), k=5,
        show_progress=False), repeat=15)
    return build, search


def wordllama_load() -> None:
    """Loading the model: ours (memory-mapped weights, the tokenizer) vs the library's path
    (import wordllama, read the weights whole), each in a fresh process."""
    ours = ("import time; t = time.perf_counter()\n"
            "from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder\n"
            "WordLlamaEmbedder().embed(['x']); print(time.perf_counter() - t)")
    library = ("import time; t = time.perf_counter()\n"
               "from wordllama import WordLlamaInference\n"
               "from safetensors.numpy import load_file; from tokenizers import Tokenizer\n"
               "from jupyter_percent_agent.ranking.embed import wordllama_files\n"
               "w, k = wordllama_files()\n"
               "WordLlamaInference(load_file(str(w))['embedding.weight'],"
               " Tokenizer.from_file(str(k))).embed(['x']); print(time.perf_counter() - t)")

    def run(code: str) -> float:
        return statistics.median(float(subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
            for _ in range(5))

    a, b = run(ours), run(library)
    print_table("loading wordllama's model and embedding one text (fresh process, median)",
                [["ours: memory-mapped", a, 1.0], ["wordllama's own classes", b, b / a]],
                ["loader", "seconds", "ratio"])


def main() -> None:
    try:
        import bm25s  # noqa: F401
    except ImportError:
        sys.exit("bench_index needs the peer: pip install bm25s")
    results = quality()
    peer = max(v for k, v in results.items() if k.startswith("bm25s"))
    ours = results["ours: FTS5 + wordllama, z-score fusion"]
    tool_selection()
    wordllama_load()
    t = speed()
    rows = [
        ["recall@3", f"{ours:.3f} (bm25s {peer:.3f})", f">= {TARGETS['recall']} and > bm25s",
         ours >= TARGETS["recall"] and ours > peer],
        [f"build, {N_DOCS} documents", f"{t['build']:.2f} s (bm25s {t['bm25s_build']:.2f} s)",
         f"<= {TARGETS['build']} s", t["build"] <= TARGETS["build"]],
        ["update after one edit", f"{t['update'] * 1000:.0f} ms",
         f"<= {TARGETS['update'] * 1000:.0f} ms", t["update"] <= TARGETS["update"]],
        ["search in process, median",
         f"{t['search'] * 1000:.1f} ms (bm25s {t['bm25s_search'] * 1000:.1f} ms)",
         f"<= {TARGETS['search'] * 1000:.0f} ms", t["search"] <= TARGETS["search"]],
        ["cold `tce sop search`, median",
         f"{t['cold']:.3f} s (python -c pass {t['python']:.3f} s)",
         f"<= {TARGETS['cold']} s", t["cold"] <= TARGETS["cold"]],
    ]
    print_table("targets", rows, ["measure", "measured", "target", "met"])


if __name__ == "__main__":
    main()
