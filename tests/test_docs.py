"""The code examples in the docs run and print what the docs say.

The documentation build (README's third command) runs the same examples; these
tests run them without Sphinx, as ``python -m doctest page.md`` would.
"""

import doctest
import re
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ("_build", "_generated", "api")
PAGES = sorted(
    p for p in (ROOT / "docs").rglob("*.md")
    if not any(part in GENERATED for part in p.relative_to(ROOT / "docs").parts)
)
EXAMPLE_PAGES = [ROOT / "README.md"] + [p for p in PAGES if ">>>" in p.read_text()]
GUIDE = sorted((ROOT / "docs" / "guide").glob("*.md"))
# The one page of the guide without examples: its table of contents.
GUIDE_WITHOUT_EXAMPLES = {"index.md"}


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLE_PAGES])
def test_doc_examples(page):
    """The docs describe the CPU (NumPy sharing a tensor's memory, ``device=cpu:0``
    printed): their examples run with the CPU as arraykit's default device, which
    follows JAX's."""
    with jax.default_device(jax.devices("cpu")[0]):
        result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


@pytest.mark.parametrize("page", GUIDE, ids=[p.name for p in GUIDE])
def test_guide_chapters_have_examples(page):
    if page.name not in GUIDE_WITHOUT_EXAMPLES:
        assert page in EXAMPLE_PAGES


def test_readme_example_is_at_most_fifteen_lines_of_code():
    block = re.search(r"## In fifteen lines\n\n```pycon\n(.*?)\n```", README, re.S).group(1)
    code = [line for line in block.splitlines() if line.startswith((">>>", "..."))]
    assert 0 < len(code) <= 15, len(code)


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target


README = (ROOT / "README.md").read_text()
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


def _array_api_table():
    import csv

    path = ROOT / "docs" / "_data" / "array_api_names.csv"
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def test_array_api_table_lists_every_name_of_the_standard():
    """The support table's list of the standard's names (docs/_data/array_api_names.csv)
    holds exactly the names array_api_strict, the standard's reference namespace, has."""
    strict = pytest.importorskip("array_api_strict")
    own = {"ArrayAPIStrictFlags", "Device", "__array_api_version__", "__version__", "linalg",
           "fft", "get_array_api_strict_flags", "reset_array_api_strict_flags",
           "set_array_api_strict_flags"}
    expected = set(strict.__all__) - own
    expected |= {f"linalg.{n}" for n in strict.linalg.__all__} | {"linalg.eig", "linalg.eigvals"}
    expected |= {f"fft.{n}" for n in strict.fft.__all__}
    rows = _array_api_table()
    assert {r["name"] for r in rows} == expected
    assert {r["added"] for r in rows} <= {"2021.12", "2022.12", "2023.12", "2024.12", "2025.12"}
