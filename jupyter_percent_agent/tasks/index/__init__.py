"""The index of a SOP folder: exact (by task_id, tool, route) and semantic (by meaning).

One SQLite file in the folder (:data:`INDEX_NAME`) holds every document's record (task_id,
path, type, tool ids, routes, content hash), its lexical terms in an FTS5 table, and its
embedding under the embedding model's id (vectors of different models are never compared).
:meth:`Index.open` brings it up to date before it answers: only documents whose content
changed are parsed and embedded again (a file whose size and modification time are unchanged
is not even read).

The file is the folder's, and the folder is untrusted (shared through git, copied, edited by
anyone): a file that is not exactly this program's index (another application's database,
another schema version, an extra table, view or trigger, a corrupt page) is deleted and
rebuilt, never used. Triggers and views are not run while the schema is checked (``PRAGMA
trusted_schema = OFF``). Nor is a well-formed file trusted unless this user's own process
wrote it: every write seals the file with an HMAC-SHA256, under this user's secret key
(:mod:`jupyter_percent_agent.trust.secret`), over every row of every table the index answers
from (vectors and FTS5's own tables included), and a file whose seal does not check (no seal,
rows edited, another user's or a shipped index) is rebuilt like a corrupt one. Rows are also
checked in shape as they are read, so a damaged one never reaches a caller.

Search fuses a BM25 ranking over the lexical terms with a cosine ranking over embeddings
(``ranking.fusion``); when the embedding model fails the index says so once and ranks by
terms alone.

The modules, by job: ``store`` (the file, its schema and seal through
``trust.sealed_sqlite``, keeping it up to date), ``search`` (answering from it), ``rows``
(what it answers with, rows checked in shape), ``choice`` (a plan for a request in words).
"""

from __future__ import annotations

from jupyter_percent_agent.tasks.index.choice import CLOSE_MARGIN, Choice, candidates, pick_plan
from jupyter_percent_agent.tasks.index.rows import Hit
from jupyter_percent_agent.tasks.index.store import (
    DEFAULT,
    INDEX_NAME,
    SEAL_PURPOSE,
    UNSEALED,
    Index,
    IndexWarning,
    UpdateReport,
    embed_text,
    seal,
    why_untrusted,
)

__all__ = ["CLOSE_MARGIN", "DEFAULT", "INDEX_NAME", "SEAL_PURPOSE", "UNSEALED", "Choice", "Hit",
           "Index", "IndexWarning", "UpdateReport", "candidates", "embed_text", "pick_plan",
           "seal", "why_untrusted"]
