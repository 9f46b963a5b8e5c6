"""SQuAD v1.1 / v2.0 (official JSON layout) into the package's data model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..types import Example
from .errors import DataFormatError, read_json


@dataclass
class SquadFile:
    """The examples of one file, in file order, and its declared version ("1.1" or "2.0")."""

    examples: list[Example]
    version: str
    source: str = ""

    def gold_texts(self) -> dict[str, list[str]]:
        """``{id: [answer text of each annotator]}``, the gold the official metrics score against."""
        return gold_texts(self.examples)

    @property
    def is_v2(self) -> bool:
        return self.version == "2.0"


def gold_texts(examples: Iterable[Example]) -> dict[str, list[str]]:
    """``{id: [texts]}`` with one text per alternative (multi-span alternatives are joined by a space)."""
    return {ex.id: [" ".join(texts) for texts in ex.answer_texts()] for ex in examples}


def load_squad(path: str | Path, limit: int | None = None) -> SquadFile:
    """Read an official SQuAD JSON file, validating every record.

    Each annotator's answer becomes one alternative with one span. A record
    whose ``answer_start`` does not point at its ``text`` in the context, an
    empty context or question, or a repeated id raises :class:`DataFormatError`
    naming the record: nothing is dropped silently. ``limit`` keeps the first
    ``limit`` questions in file order (a fixed, reproducible slice).
    """
    source = str(path)
    raw = read_json(path)
    return parse_squad(raw, source=source, limit=limit)


def parse_squad(raw: Any, source: str = "", limit: int | None = None) -> SquadFile:
    """Validate an already-parsed SQuAD object (see :func:`load_squad`)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise DataFormatError("expected an object with a 'data' list (official SQuAD layout)", source=source)
    version = str(raw.get("version", "1.1")).lstrip("v")
    examples: list[Example] = []
    seen: set[str] = set()
    for article in raw["data"]:
        title = article.get("title", "") if isinstance(article, dict) else ""
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise DataFormatError("article without a 'paragraphs' list", record=title or None, source=source)
        for paragraph in paragraphs:
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            for qa in paragraph.get("qas", []) if isinstance(paragraph, dict) else []:
                example = _parse_question(qa, context, title, source)
                if example.id in seen:
                    raise DataFormatError("duplicate question id", record=example.id, source=source)
                seen.add(example.id)
                examples.append(example)
                if limit is not None and len(examples) >= limit:
                    return SquadFile(examples, version, source)
    if any(not ex.is_answerable for ex in examples) and version != "2.0":
        version = "2.0"  # unanswerable questions only exist in v2.0 data, whatever the header says
    return SquadFile(examples, version, source)


def _parse_question(qa: Any, context: Any, title: str, source: str) -> Example:
    if not isinstance(qa, dict) or not isinstance(qa.get("id"), str):
        raise DataFormatError("question without a string 'id'", record=title or None, source=source)
    qid = qa["id"]
    if not isinstance(context, str) or not context.strip():
        raise DataFormatError("empty or missing context", record=qid, source=source)
    question = qa.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataFormatError("empty or missing question", record=qid, source=source)
    answers = qa.get("answers")
    if not isinstance(answers, list):
        raise DataFormatError("'answers' must be a list", record=qid, source=source)
    if qa.get("is_impossible") and answers:
        raise DataFormatError("question marked is_impossible has answers", record=qid, source=source)
    alternatives = []
    for answer in answers:
        text, start = (answer.get("text"), answer.get("answer_start")) if isinstance(answer, dict) else (None, None)
        if not isinstance(text, str) or not text or not isinstance(start, int):
            raise DataFormatError("answer needs a non-empty 'text' and an integer 'answer_start'", qid, source)
        end = start + len(text)
        if start < 0 or context[start:end] != text:
            found = context.find(text)
            hint = f"; the text does occur at {found}" if found >= 0 else "; the text is not in the context"
            raise DataFormatError(f"answer {text!r} is not at answer_start {start}{hint}", qid, source)
        alternatives.append(((start, end),))
    if not alternatives and not qa.get("is_impossible", False):
        raise DataFormatError("question has no answers and is not marked is_impossible", qid, source)
    return Example(qid, question, context, tuple(alternatives), title)


def examples_to_squad_json(examples: Sequence[Example], version: str = "1.1") -> dict[str, Any]:
    """The inverse of :func:`parse_squad`: official layout, one paragraph entry per example context run."""
    data: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for ex in examples:
        paragraphs = data.setdefault(ex.title, {})
        paragraphs.setdefault(ex.context, []).append(
            {
                "id": ex.id,
                "question": ex.question,
                "answers": [{"text": ex.context[s:e], "answer_start": s} for alt in ex.answers for s, e in alt[:1]],
                **({"is_impossible": not ex.is_answerable} if version == "2.0" else {}),
            }
        )
    return {
        "version": version,
        "data": [
            {"title": title, "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs.items()]}
            for title, paragraphs in data.items()
        ],
    }
