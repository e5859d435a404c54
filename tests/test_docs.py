"""The code examples in the docs run and print what the docs say."""

import doctest
from pathlib import Path

import pytest

DOCS = sorted((Path(__file__).resolve().parent.parent / "docs").glob("*.md"))


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_doc_examples(page):
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
