"""Every example output in the docs is produced by a test (``tests/docs_examples.py``)."""
from __future__ import annotations

from pathlib import Path

from docs_examples import examples, unmarked_transcripts

TESTS = Path(__file__).resolve().parent


def test_every_transcript_in_the_docs_is_marked():
    assert unmarked_transcripts() == []


def test_every_marked_example_is_claimed_by_a_test():
    sources = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.glob("test_*.py")
                        if p.name != Path(__file__).name)
    unclaimed = [n for n in examples() if f'"{n}"' not in sources and f"'{n}'" not in sources]
    assert unclaimed == []
