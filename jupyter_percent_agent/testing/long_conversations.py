"""Long labelled conversations, generated deterministically, for history relevance.

Each conversation is a message file of ``messages`` messages with their replies: everyday
threads of work (filler drawn from a few topics, with the words those topics share), and a few
early *fact* cells that hold a name, a number or a code, each said once, and later cells that
share a fact's words but not the fact (distractors). Its final question needs two or three of
those facts, each asked by its exact value or in other words (half and half); the labels are
the fact cells' ids. ``tests/`` and ``benchmarks/bench_history.py``
share it, so the test and the benchmark measure the same thing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TOPICS = {
    "deploy": ("the deploy pipeline", ["build", "container", "rollout", "staging", "canary",
                                       "release", "health check", "server", "config"]),
    "data": ("the sales report", ["query", "table", "database", "column", "join", "invoice",
                                  "customer", "monthly totals", "dashboard"]),
    "travel": ("the team offsite", ["hotel", "train", "booking", "agenda", "budget", "room",
                                    "dinner", "venue", "schedule"]),
    "bug": ("a flaky test", ["timeout", "retry", "stack trace", "fixture", "assertion",
                             "log line", "port", "socket", "thread"]),
    "writing": ("the quarterly newsletter", ["draft", "headline", "paragraph", "tone",
                                             "review", "deadline", "section", "image", "edit"]),
}

FACTS = [
    # (said, its reply, asked in other words, asked by its exact value, distractors: later
    # cells that share the fact's words but not the fact)
    ("The staging database runs on host {host} and listens on port {port}.",
     "Noted: staging database at {host}, port {port}.",
     "which port does the staging database listen on", "what runs on {host}",
     ["The production database moved to a bigger host last night.",
      "Which port should the new cache listen on? Not decided yet.",
      "The staging deploy was slow again; the database was fine."]),
    ("For the Acme account, use invoice code {code} on every bill.",
     "Understood, Acme invoices carry code {code}.",
     "what invoice code do Acme's bills carry", "which account uses {code}",
     ["Acme asked about their invoice dates again; nothing changes for now.",
      "The invoice template needs a new logo before the next bill.",
      "Every bill this month was late because of the code freeze."]),
    ("My colleague {person} owns the payment service; ask her before changing it.",
     "Got it: {person} owns the payment service.",
     "who owns the payment service", "what {person} owns",
     ["The payment service had a slow rollout today.",
      "Ask before changing the shared config, the owners asked for that.",
      "My colleague from sales wants the dashboard by Friday."]),
    ("The offsite budget was approved at {amount} euros in total.",
     "Good news: an approved budget of {amount} euros.",
     "how much was approved for the offsite", "what the {amount} euros were for",
     ["The offsite agenda is not approved yet; budget talks next week.",
      "The hotel total was higher than we thought.",
      "Marketing asked for more budget for the newsletter."]),
    ("The feature flag for the new checkout is called {flag}.",
     "I'll remember the checkout flag name {flag}.",
     "what the checkout feature flag is called", "what {flag} turns on",
     ["We removed an old feature flag from the search page.",
      "The new checkout page needs a review of its copy.",
      "Feature flags should be named after the team, someone said."]),
    ("Our vendor contract number is {contract}; it renews in March.",
     "Contract {contract}, renewing in March: noted.",
     "the vendor contract number", "when {contract} renews",
     ["The vendor sent a new price list; the contract stays as is.",
      "March is busy: three releases and the offsite.",
      "Legal wants every contract in the shared folder."]),
]

PEOPLE = ["Ines Okafor", "Marta Lindqvist", "Priya Raman", "Sofia Brandt", "Leila Haddad"]


@dataclass(frozen=True)
class LabelledConversation:
    """A message file's text, its final question, and the ids of the cells it needs."""

    name: str
    text: str
    question: str
    needed: tuple[str, ...]
    messages: int


def _sentence(rng: random.Random, topic: str) -> str:
    subject, words = TOPICS[topic]
    a, b = rng.sample(words, 2)
    forms = [f"About {subject}: the {a} still needs work before the {b} is ready.",
             f"Can you check the {a} for {subject}? The {b} looked wrong yesterday.",
             f"I updated the {a}; the {b} for {subject} is next.",
             f"What would you change in the {a} of {subject}, given the {b}?",
             f"The {a} and the {b} of {subject} are both on my list today."]
    return rng.choice(forms)


def _reply(rng: random.Random, topic: str, length: int) -> str:
    subject, words = TOPICS[topic]
    parts = []
    for _ in range(length):
        a, b = rng.sample(words, 2)
        parts.append(rng.choice([
            f"I would look at the {a} first, since the {b} depends on it.",
            f"For {subject}, keep the {a} small and review the {b} after.",
            f"The {a} is fine; the {b} could be simpler.",
            f"Try changing the {a} and run it again, then compare the {b}.",
        ]))
    return " ".join(parts)


def _cell(cid: str, title: str, text: str, reply: str) -> str:
    return (f"## %% {title}[^{cid}]\n\n[^{cid}]: [markdown]\n\n{text}\n\n"
            f"### %%% Reply[^{cid}.1]\n\n[^{cid}.1]: [assistant] agent=\"default\"\n\n"
            f"{reply}\n\n")


def conversation(seed: int, messages: int = 100, *, needed: int = 3,
                 auto: bool = True) -> LabelledConversation:
    """A conversation of ``messages`` earlier messages (each with a reply) whose final
    question needs ``needed`` fact cells, all in its first fifth."""
    rng = random.Random(seed)
    values = {"host": f"db-stg-{rng.randint(2, 9)}.internal", "port": str(rng.randint(5400, 5499)),
              "code": f"INV-{rng.randint(10000, 99999)}", "person": rng.choice(PEOPLE),
              "amount": f"{rng.randint(12, 48)},{rng.randint(100, 999)}",
              "flag": f"checkout_v{rng.randint(2, 7)}_{rng.choice(['blue', 'fast', 'lite'])}",
              "contract": f"VC-{rng.randint(1000, 9999)}-{rng.choice('ABCDEFGH')}"}
    facts = rng.sample(FACTS, needed)
    early = sorted(rng.sample(range(2, max(needed + 2, messages // 5)), needed))
    distract = {n: rng.choice(fact[4]) for fact in facts
                for n in rng.sample(range(early[-1] + 1, messages + 1), 3)}
    body, needed_ids = [], []
    topics = list(TOPICS)
    for n in range(1, messages + 1):
        cid = f"m{n}"
        if n in early:
            said, reply = facts[early.index(n)][:2]
            body.append(_cell(cid, "Note", said.format(**values), reply.format(**values)))
            needed_ids.append(cid)
            continue
        topic = rng.choice(topics)
        text = " ".join(_sentence(rng, topic) for _ in range(rng.randint(1, 3)))
        if n in distract:
            text = distract[n] + " " + text
        body.append(_cell(cid, TOPICS[topic][0].capitalize(), text,
                          _reply(rng, topic, rng.randint(3, 8))))
    asks = [(f[3] if rng.random() < 0.5 else f[2]).format(**values) for f in facts]
    question = ("Before I send the summary, remind me " + ", ".join(asks[:-1]) + " and "
                + asks[-1] + "?")
    front = "---\nhistory: auto\n---\n\n" if auto else ""
    return LabelledConversation(f"long-{seed}", front + "".join(body), question, tuple(needed_ids),
                        messages)
