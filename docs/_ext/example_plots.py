"""Run the examples that draw the tutorials' loss curves while the site builds.

``example_runs`` in ``conf.py`` lists ``(name, script, arguments)``; each script runs
from the repository root with the building Python, ``{plot}`` in its arguments
replaced by ``_generated/<name>.png``, and its standard output saved to
``_generated/<name>.txt`` for the tutorial page to show. A run is repeated only when
its outputs are missing or older than the script or anything in the ``arraykit``
package. A failing run is a warning (an error under ``-W``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _newest(paths):
    return max(p.stat().st_mtime for p in paths)


def run_examples(app):
    root = Path(app.confdir).parent
    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    sources = list((root / "arraykit").rglob("*.py"))
    for name, script, arguments in app.config.example_runs:
        png, txt = out / f"{name}.png", out / f"{name}.txt"
        if png.exists() and txt.exists() and \
                _newest([png, txt]) > _newest([root / script, *sources]):
            continue
        command = [sys.executable, script, *(a.replace("{plot}", str(png)) for a in arguments)]
        logger.info("running %s", " ".join(command[1:]))
        done = subprocess.run(command, cwd=root, capture_output=True, text=True)
        if done.returncode != 0 or not png.exists():
            logger.warning("%s failed (exit %d):\n%s", script, done.returncode, done.stderr[-3000:])
            continue
        txt.write_text(done.stdout.replace(str(png), f"{name}.png"))


def setup(app):
    app.add_config_value("example_runs", [], "env")
    app.connect("builder-inited", run_examples)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
