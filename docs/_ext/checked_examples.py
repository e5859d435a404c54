"""Run every ``>>>`` example of a page while the site builds; a wrong output is a warning.

Each page is one doctest, as ``python -m doctest page.md`` would run it: the
examples share the page's globals, run in order from the repository root, and
their printed output is compared with what the page shows (``...`` matches
anything). Code fences are blanked out first, so a fence directly after an
output does not become part of it. Every mismatch and every unexpected exception
is reported as a warning at its line, so ``sphinx-build -W`` fails on it. Pages
named by ``checked_examples_required`` (glob patterns) must contain examples,
except those in ``checked_examples_exempt``.
"""

from __future__ import annotations

import doctest
import fnmatch
import io
import os
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

FENCE = re.compile(r"^\s*(```|~~~|:::)")


def example_text(source):
    """``source`` with its code-fence lines blanked (line numbers kept)."""
    return "\n".join("" if FENCE.match(line) else line for line in source.split("\n"))


class _CollectingRunner(doctest.DocTestRunner):
    """A doctest runner that keeps each failure's line and report instead of printing."""

    def __init__(self):
        super().__init__(optionflags=doctest.ELLIPSIS, verbose=False)
        self.reports = []

    def report_failure(self, out, test, example, got):
        buffer = io.StringIO()
        super().report_failure(buffer.write, test, example, got)
        self.reports.append((example.lineno, buffer.getvalue()))

    def report_unexpected_exception(self, out, test, example, exc_info):
        buffer = io.StringIO()
        super().report_unexpected_exception(buffer.write, test, example, exc_info)
        self.reports.append((example.lineno, buffer.getvalue()))


def run_examples(text, name, path, cwd):
    """Run the examples in ``text``; returns (number run, [(line, report), ...])."""
    test = doctest.DocTestParser().get_doctest(
        example_text(text), {"__name__": "__main__"}, name, str(path), 0)
    runner = _CollectingRunner()
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        runner.run(test, clear_globs=True)
    finally:
        os.chdir(previous)
    return len(test.examples), runner.reports


def _check_page(app, docname, source):
    path = Path(app.env.doc2path(docname))
    required = docname not in app.config.checked_examples_exempt and any(
        fnmatch.fnmatch(docname, p) for p in app.config.checked_examples_required)
    if ">>>" not in source[0]:
        if required:
            logger.warning("page has no examples to check", location=docname)
        return
    count, failures = run_examples(source[0], docname, path, app.confdir.parent)
    for line, report in failures:
        logger.warning("example output differs:\n%s", report, location=(docname, line + 1))
    logger.info("checked %d examples in %s (%d failed)", count, docname, len(failures))


def setup(app):
    app.add_config_value("checked_examples_required", [], "env")
    app.add_config_value("checked_examples_exempt", [], "env")
    app.connect("source-read", _check_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
