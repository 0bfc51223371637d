"""Tokens: the same tool calls as ATTP TOML and as OpenAI function-calling JSON arguments.

The seed (001, ATTP) claims TOML costs fewer tokens than JSON for tool calls, mostly because
multi-line code needs no escaping in a ''' literal string. Each sample is a realistic tool call
(thought, target, multi-line code); it is written once as the ATTP reply (``format_reply``:
thought, ``[tool_call]``, status, target, code) and once as the ``arguments`` string a
function-calling model emits (``json.dumps`` of ``{"thought", "target", "code"}``, newlines and
quotes escaped). Both are counted with ``litellm.token_counter`` for tokenizers litellm carries
offline. Run: ``.venv/bin/python -m benchmarks.bench_tokens``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

# litellm fetches its cost map at import unless told not to; tokenizers must not download either.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks._timing import print_table
from jupyter_percent_agent.attp import ToolCall, format_reply, parse_reply

# model name -> what litellm counts it with (all shipped inside litellm, no download)
MODELS: dict[str, str] = {
    "gpt-4o": "tiktoken o200k_base",
    "gpt-4": "tiktoken cl100k_base (also used for claude-3.x)",
    "claude-sonnet-4-5": "litellm's bundled Anthropic tokenizer",
}


@dataclass(frozen=True)
class Sample:
    name: str
    thought: str
    target: str
    code: str
    lang: str = "en"


SAMPLES: list[Sample] = [
    Sample(
        "weather_two_cities",
        "1. Understand the request: the user wants the weather in Paris and Oslo.\n"
        "2. Choose tools: get_weather gives the current weather of one city.\n"
        "3. Check tools: get_weather is available.\n"
        "4. Plan: call it once per city and return both.",
        "Current weather in Paris and Oslo",
        'weather = {}\nfor city in ["Paris", "Oslo"]:\n'
        '    weather[city] = get_weather(city, unit="celsius")\n__result__ = weather\n',
    ),
    Sample(
        "forecast_average",
        "The user wants the mean temperature in Tokyo over five days. forecast returns the daily\n"
        "values; statistics.mean averages them.",
        "Average the 5-day forecast for Tokyo",
        'temps = forecast("Tokyo", days=5)\n'
        "__result__ = {\n"
        '    "days": temps,\n'
        '    "average": round(statistics.mean(temps), 1),\n'
        '    "spread": max(temps) - min(temps),\n'
        "}\n",
    ),
    Sample(
        "search_and_summarize",
        "Search for Python async programming, keep the top 3 results, and return titles and links\n"
        "so I can summarize them.",
        "Search the web for Python async programming",
        'results = search_web("Python async programming", max_results=3)\n'
        '__result__ = [{"title": r["title"], "url": r["url"]} for r in results]\n',
    ),
    Sample(
        "log_dates_regex",
        "Extract every ISO date from the deploy log and sort them; re is allow-listed.",
        "Find and sort dates in the log",
        'log = read_file("/srv/app/deploy.log")\n'
        'dates = re.findall(r"\\d{4}-\\d{2}-\\d{2}", log)\n'
        'print(f"found {len(dates)} dates")\n'
        "__result__ = sorted(set(dates))\n",
    ),
    Sample(
        "config_json",
        "Read the config file, parse the JSON, and report the timeout and retries.",
        "Read timeout settings from config.json",
        'raw = read_file("/home/user/config.json")\n'
        "config = json.loads(raw)\n"
        '__result__ = {"timeout": config.get("timeout", 30), '
        '"retries": config.get("retries", 3)}\n',
    ),
    Sample(
        "write_report",
        "Build a Markdown report of the word counts of three notes and write it to a file.",
        "Write a word-count report",
        'notes = {"a": "to be or not to be", "b": "hello world", "c": "one"}\n'
        'lines = ["| note | words |", "|------|-------|"]\n'
        "for name, text in notes.items():\n"
        '    lines.append(f"| {name} | {word_count(text)} |")\n'
        'ok = write_file("/home/user/report.md", "\\n".join(lines) + "\\n")\n'
        '__result__ = {"written": ok, "rows": len(notes)}\n',
    ),
    Sample(
        "list_markdown_files",
        "List the Markdown files in the docs folder and count them by first letter.",
        "Inventory of docs/*.md",
        'files = list_files("/home/user/docs", pattern="*.md")\n'
        "by_letter = {}\n"
        "for f in files:\n"
        "    key = f[0].lower()\n"
        "    by_letter[key] = by_letter.get(key, 0) + 1\n"
        '__result__ = {"count": len(files), "by_letter": by_letter}\n',
    ),
    Sample(
        "camera_and_weather",
        "Show the gate camera live and check the weather at the site (Cairo).",
        "Live video of gate-1 and the weather in Cairo",
        'live = get_camera_live_url("gate-1")\n'
        'weather = get_weather("Cairo")\n'
        '__result__ = {"live": live, "weather": weather}\n',
    ),
    Sample(
        "budget_split",
        "Split the 12,000 budget over the teams in proportion to their head count.",
        "Budget per team",
        'heads = {"design": 4, "backend": 7, "ops": 3}\n'
        "total = sum(heads.values())\n"
        "__result__ = {\n"
        "    team: round(divide(12000 * n, total), 2)\n"
        "    for team, n in heads.items()\n"
        "}\n",
    ),
    Sample(
        "date_arithmetic",
        "How many days until the release on 2026-12-15, and which weekday is it?",
        "Days until the release date",
        "release = datetime.date(2026, 12, 15)\n"
        "today = datetime.date.today()\n"
        "__result__ = {\n"
        '    "days_left": (release - today).days,\n'
        '    "weekday": release.strftime("%A"),\n'
        "}\n",
    ),
    Sample(
        "random_sample",
        "Pick 5 random survey respondents with a fixed seed so the choice can be reproduced.",
        "Reproducible random sample",
        "random.seed(42)\n"
        'people = [f"user{i:03d}" for i in range(1, 201)]\n'
        "__result__ = random.sample(people, 5)\n",
    ),
    Sample(
        "stats_summary",
        "Summarize the response times: mean, median, standard deviation and 95th percentile.",
        "Response time statistics",
        "times = [120, 98, 143, 110, 87, 301, 95, 102, 99, 133]\n"
        "ordered = sorted(times)\n"
        "p95 = ordered[math.ceil(0.95 * len(ordered)) - 1]\n"
        "__result__ = {\n"
        '    "mean": statistics.mean(times),\n'
        '    "median": statistics.median(times),\n'
        '    "stdev": round(statistics.stdev(times), 2),\n'
        '    "p95": p95,\n'
        "}\n",
    ),
    Sample(
        "search_then_read",
        "Find the official asyncio docs page, then read its first section to quote it.",
        "Find and read the asyncio docs",
        'hits = search_web("asyncio site:docs.python.org", max_results=5)\n'
        'docs = [h for h in hits if "docs.python.org" in h["url"]]\n'
        "if not docs:\n"
        '    __result__ = {"error": "no official page found"}\n'
        "else:\n"
        '    page = fetch_page(docs[0]["url"])\n'
        '    __result__ = {"url": docs[0]["url"], "intro": page[:500]}\n',
    ),
    Sample(
        "email_validation",
        "Check which of the pasted addresses are valid e-mail addresses.",
        "Validate e-mail addresses",
        'emails = ["ada@example.org", "bad@", "x.y+z@mail.example.com", "no at sign"]\n'
        'pattern = re.compile(r"^[\\w.+-]+@[\\w-]+(\\.[\\w-]+)+$")\n'
        "__result__ = {e: bool(pattern.match(e)) for e in emails}\n",
    ),
    Sample(
        "retry_loop",
        "The sensor API is flaky; try up to three times and report which attempt worked.",
        "Read sensor 7 with retries",
        "attempts = []\n"
        "value = None\n"
        "for attempt in range(1, 4):\n"
        '    reading = read_sensor("sensor-7")\n'
        '    attempts.append(reading["status"])\n'
        '    if reading["status"] == "ok":\n'
        '        value = reading["value"]\n'
        "        break\n"
        '__result__ = {"value": value, "attempts": attempts}\n',
    ),
    Sample(
        "csv_parsing",
        "Parse the CSV text the user pasted and total the amounts per currency.",
        "Totals per currency",
        'csv_text = """date,amount,currency\n'
        "2026-01-02,12.50,EUR\n"
        "2026-01-03,8.00,USD\n"
        '2026-01-05,3.25,EUR"""\n'
        "totals = {}\n"
        "for row in csv_text.splitlines()[1:]:\n"
        '    _, amount, currency = row.split(",")\n'
        "    totals[currency] = totals.get(currency, 0) + float(amount)\n"
        "__result__ = totals\n",
    ),
    Sample(
        "text_cleanup",
        "Normalize the whitespace and quotes of the paragraph, then count its words.",
        "Clean and count the paragraph",
        'text = "  He said: \\"It\'s   done.\\"\\n\\tReally?  "\n'
        'clean = re.sub(r"\\s+", " ", text).strip()\n'
        "clean = clean.replace('\"', \"'\")\n"
        '__result__ = {"text": clean, "words": word_count(clean)}\n',
    ),
    Sample(
        "spell_stream",
        "The user wants to see the word spelled out live; spell streams each letter.",
        "Spell 'jupyter'",
        'letters = spell("jupyter")\n__result__ = {"letters": letters, "count": len(letters)}\n',
    ),
    Sample(
        "unit_conversion",
        "Convert the list of Fahrenheit readings to Celsius, rounded to one decimal.",
        "Fahrenheit to Celsius",
        "readings_f = [32, 68.5, 98.6, 212, -40]\n"
        "__result__ = [\n"
        '    {"f": f, "c": round((f - 32) * 5 / 9, 1)}\n'
        "    for f in readings_f\n"
        "]\n",
    ),
    Sample(
        "drone_status",
        "1. 理解用户请求：用户想知道无人机的电量和直播地址\n"
        "2. 选择工具：get_drone_status 和 get_drone_live_url\n"
        "3. 工具验证：两个工具都在可用列表中 ✓\n"
        "4. 执行计划：先查状态，电量足够再取直播地址",
        "查询无人机状态并获取直播链接",
        'status = get_drone_status("drone-2")\n'
        'if status["battery"] < 20:\n'
        '    __result__ = {"error": "电量不足", "battery": status["battery"]}\n'
        "else:\n"
        '    url = get_drone_live_url("无人机")\n'
        '    __result__ = {"battery": status["battery"], "live": url}\n',
        "zh",
    ),
    Sample(
        "section_progress",
        "用户想看三个标段的进度，并算出平均完成率。\n"
        "工具：get_section_progress 返回单个标段的完成率。",
        "统计标段进度",
        'sections = ["一标段", "二标段", "三标段"]\n'
        "progress = {s: get_section_progress(s) for s in sections}\n"
        "__result__ = {\n"
        '    "progress": progress,\n'
        '    "average": round(statistics.mean(progress.values()), 1),\n'
        "}\n",
        "zh",
    ),
    Sample(
        "search_chinese",
        "用户需要搜索Python异步编程相关信息并获取前3个结果。\n"
        "可用工具：search_web（支持网络搜索）\n"
        "工具验证：search_web 存在于可用工具列表 ✓",
        "搜索Python异步编程相关内容",
        'results = search_web("Python异步编程", max_results=3)\n'
        "__result__ = [f\"{r['title']} - {r['url']}\" for r in results]\n",
        "zh",
    ),
    Sample(
        "export_measurement",
        "用户要导出计量进度报表：先查询进度，再生成下载链接，按前端约定返回 <download> 标签。",
        "导出计量进度",
        'rows = get_measurement_progress(month="2026-10")\n'
        'link = export_report("计量进度", rows)\n'
        '__result__ = {"rows": len(rows), "download": link}\n',
        "zh",
    ),
]


def as_toml(sample: Sample) -> str:
    """The ATTP reply, as the model writes it."""
    return format_reply(ToolCall(thought=sample.thought, target=sample.target, code=sample.code))


def as_toml_fields(sample: Sample) -> str:
    """The ATTP reply without ``[tool_call]`` and ``status``: the same three fields as the JSON."""
    return as_toml(sample).replace('\n[tool_call]\nstatus = "success"\n', "\n")


def as_json(sample: Sample) -> str:
    """The function-calling ``arguments`` string: one JSON object, newlines escaped."""
    args = {"thought": sample.thought, "target": sample.target, "code": sample.code}
    return json.dumps(args, ensure_ascii=False)


def count(model: str, text: str) -> int:
    import litellm

    return litellm.token_counter(model=model, text=text)


def main() -> None:
    import litellm  # noqa: F401  (after the environment is set)

    for sample in SAMPLES:  # both forms must carry the same call
        parsed = parse_reply(as_toml(sample))
        assert isinstance(parsed, ToolCall) and parsed.code == sample.code, sample.name
        assert json.loads(as_json(sample))["code"] == sample.code, sample.name

    forms = {"ATTP TOML": as_toml, "TOML, same 3 fields": as_toml_fields}
    rows = []
    counts: dict[str, list[tuple[int, int]]] = {}
    for model in MODELS:
        json_counts = [count(model, as_json(s)) for s in SAMPLES]
        for form, render in forms.items():
            pairs = [
                (count(model, render(s)), j) for s, j in zip(SAMPLES, json_counts, strict=True)
            ]
            counts.setdefault(model, pairs)
            for label, keep in (("all", None), ("English", "en"), ("Chinese", "zh")):
                chosen = [p for p, s in zip(pairs, SAMPLES, strict=True) if keep in (None, s.lang)]
                toml_total = sum(t for t, _ in chosen)
                json_total = sum(j for _, j in chosen)
                rows.append(
                    [
                        model,
                        form,
                        label,
                        len(chosen),
                        toml_total,
                        json_total,
                        toml_total / json_total,
                    ]
                )
    print_table(
        "Tool-call tokens: ATTP TOML vs function-calling JSON (litellm.token_counter)",
        rows,
        ["model", "TOML form", "samples", "n", "TOML tokens", "JSON tokens", "TOML/JSON"],
    )
    per_sample = [
        [s.name, *(f"{t}/{j}" for t, j in (counts[m][i] for m in MODELS))]
        for i, s in enumerate(SAMPLES)
    ]
    print_table("Per sample, ATTP TOML/JSON tokens", per_sample, ["sample", *MODELS])
    print("\nTokenizers: " + "; ".join(f"{m}: {how}" for m, how in MODELS.items()))


if __name__ == "__main__":
    main()
