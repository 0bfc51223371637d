"""Lexical terms for the index: words for Latin scripts, character bigrams for Chinese.

SQLite's FTS5 tokenizers split on spaces and punctuation, so a run of Chinese characters
(which has neither) would be one token, and a query would match only the identical run.
Text is therefore turned into terms here, in Python, and FTS5 indexes the terms
(``porter unicode61``: English words are stemmed there) in the table :data:`TERMS_TABLE`
defines: ``head`` (names, descriptions), ``body`` (the rest), ``chars``. Chinese runs become
overlapping character bigrams (the usual CJK analysis: most Chinese words are two
characters) and, in the low-weight ``chars`` column, single characters; identifiers are split
on ``_``, ``/``, ``-`` and camel case.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata

# A run of CJK ideographs (and kana/hangul: the same bigram treatment suits them), or a word.
_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
    r"|[^\W_]+",
    re.UNICODE,
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_CJK_START = "\u3040"

# Words that carry no meaning for a search; a query made of them only still works (they are
# dropped only when something else is left).
STOPWORDS = frozenset(
    "a an and are as at be been but by can could do does did for from has have how i if in "
    "into is it its me my of on or our please should so that the their them then there these "
    "this to us was we were what when where which who why will with would you your".split()
)
STOPCHARS = frozenset("的了是在和与及或把被将就也都而吗呢吧啊我你他她它们这那个一有请")


def _is_cjk(token: str) -> bool:
    return token[0] >= _CJK_START and not token[0].isascii()


def _split_identifier(text: str) -> str:
    return _CAMEL.sub(" ", text)


def terms(text: str) -> tuple[list[str], list[str]]:
    """``(terms, chars)`` of a text: words and Chinese bigrams; Chinese single characters."""
    text = unicodedata.normalize("NFKC", _split_identifier(text)).lower()
    words: list[str] = []
    chars: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if not _is_cjk(token):
            words.append(token)
            continue
        if len(token) == 1:
            words.append(token)
        else:
            words.extend(token[i:i + 2] for i in range(len(token) - 1))
        chars.extend(c for c in token if c not in STOPCHARS)
    return words, chars


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, stopwords dropped unless nothing else is left."""
    words, chars = terms(text)
    found = list(dict.fromkeys(words + chars))
    kept = [t for t in found if t not in STOPWORDS]
    return kept or found


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: any of the query's terms (each quoted, so never syntax)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms(text))


TERMS_TABLE = ("CREATE VIRTUAL TABLE terms USING fts5("
               "head, body, chars, tokenize = 'porter unicode61 remove_diacritics 2')")
COLUMN_WEIGHTS = (3.0, 1.0, 0.5)  # bm25 weights of the head, body and chars columns


def columns(head: str, body: str) -> tuple[str, str, str]:
    """The ``terms`` row of an item: its head and body as terms, and their Chinese chars."""
    head_terms, head_chars = terms(head)
    body_terms, body_chars = terms(body)
    return " ".join(head_terms), " ".join(body_terms), " ".join(head_chars + body_chars)


def bm25_scores(conn: sqlite3.Connection, query: str) -> dict[int, float]:
    """BM25 scores (higher is better) of the ``terms`` rows sharing terms with ``query``."""
    match = fts_query(query)
    if not match:
        return {}
    weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
    return {row[0]: -row[1] for row in conn.execute(
        f"SELECT rowid, bm25(terms, {weights}) FROM terms WHERE terms MATCH ?", (match,))}
