"""Generate the support tables of ``support.md`` from the code while the site builds.

Two tables, written as Markdown into ``docs/_generated/`` and included by
``support.md``:

- every name of the array API standard (``_data/array_api_names.csv``: group and the
  version that added it) and whether arraykit has it, linked to its API entry;
- the commonly used PyTorch tensor methods and ``torch.nn.functional`` functions
  (``_data/pytorch_names.csv``) and whether arraykit has them, as a method, a
  ``arraykit.nn.functional`` function or a namespace function, with the behaviour
  differences explained in ``pytorch.md``. When PyTorch is importable the list is
  checked against it (a name PyTorch does not have is a warning); otherwise the
  committed list is used as it is.
"""

from __future__ import annotations

import csv
import inspect
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

YES, NO = "yes", "**no**"


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _resolve(root, dotted):
    obj = root
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return None
        obj = getattr(obj, part)
    return obj


def array_api_table(ak, rows):
    """Markdown table: name, group, version added, whether arraykit has it."""
    lines = ["| name | group | added in | arraykit |", "|---|---|---|---|"]
    missing = 0
    for r in rows:
        obj = _resolve(ak, r["name"])
        has = obj is not None or r["name"] == "newaxis"
        missing += not has
        short = r["name"].rsplit(".", 1)[-1]
        # linalg.matmul and friends are arraykit.matmul itself, documented there
        target = short if "." in r["name"] and getattr(ak, short, None) is obj else r["name"]
        cell = f"{{py:obj}}`{r['name']} <arraykit.{target}>`" if has else f"`{r['name']}`"
        lines.append(f"| {cell} | {r['group']} | {r['added']} | {YES if has else NO} |")
    head = (f"{len(rows) - missing} of the standard's {len(rows)} names are in arraykit "
            f"(`arraykit.__array_api_version__` is `{ak.__array_api_version__}`).\n\n")
    return head + "\n".join(lines) + "\n"


def _torch_names():
    try:
        import torch
        import torch.nn.functional as torch_functional
    except ImportError:
        return None
    return {"method": set(dir(torch.Tensor)), "functional": set(dir(torch_functional))}


def _arraykit_spelling(ak, kind, name):
    if kind == "method":
        if inspect.getattr_static(ak.Tensor, name, None) is not None:
            return f"{{py:obj}}`Tensor.{name} <arraykit.Tensor.{name}>`"
    elif hasattr(ak.nn.functional, name):
        return f"{{py:obj}}`arraykit.nn.functional.{name}`"
    if name in ak.__all__:
        return f"as a function: {{py:obj}}`arraykit.{name}`"
    return None


def pytorch_table(ak, rows, kind, torch_names):
    """Markdown table of the rows of ``kind``: name, arraykit's spelling, difference."""
    lines = ["| PyTorch | arraykit | difference |", "|---|---|---|"]
    prefix = "Tensor." if kind == "method" else "F."
    for r in (r for r in rows if r["kind"] == kind):
        if torch_names is not None and r["name"] not in torch_names[kind]:
            logger.warning("pytorch_names.csv lists %s%s, which PyTorch does not have",
                           prefix, r["name"])
        spelling = _arraykit_spelling(ak, kind, r["name"]) or NO
        difference = r["difference"]
        if difference:
            difference += " ({ref}`why <pytorch-differences>`)"
        lines.append(f"| `{prefix}{r['name']}` | {spelling} | {difference} |")
    return "\n".join(lines) + "\n"


def _write(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_tables(app):
    import arraykit as ak

    data = Path(app.srcdir) / "_data"
    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    _write(out / "array_api_table.md", array_api_table(ak, _rows(data / "array_api_names.csv")))
    torch_rows = _rows(data / "pytorch_names.csv")
    torch_names = _torch_names()
    source = ("checked against the installed PyTorch" if torch_names is not None
              else "PyTorch is not installed: the committed list is used unchecked")
    logger.info("support tables: PyTorch names %s", source)
    for kind in ("method", "functional"):
        _write(out / f"pytorch_{kind}_table.md", pytorch_table(ak, torch_rows, kind, torch_names))


def setup(app):
    app.connect("builder-inited", write_tables, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
