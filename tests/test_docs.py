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


ROOT = Path(__file__).resolve().parent.parent
TEXT_FILES = sorted(
    [ROOT / "README.md", ROOT / "pyproject.toml"]
    + list((ROOT / "docs").glob("*.md"))
    + list((ROOT / "benchmarks").glob("*.md"))
    + list((ROOT / "conformance").glob("*.md"))
    + list((ROOT / "arraykit").rglob("*.py"))
    + list((ROOT / "tests").glob("*.py"))
    + list((ROOT / "examples").glob("*.py"))
    + list((ROOT / "benchmarks").glob("*.py"))
)


@pytest.mark.parametrize("path", TEXT_FILES, ids=[str(p.relative_to(ROOT)) for p in TEXT_FILES])
def test_no_merge_conflict_markers(path):
    markers = ("<" * 7 + " ", "=" * 7 + "\n", ">" * 7 + " ")
    lines = path.read_text().splitlines(keepends=True)
    found = [n + 1 for n, line in enumerate(lines) if line.startswith(markers)]
    assert not found, f"{path.name}: merge conflict markers at lines {found}"
