"""Generate the support tables of ``support.md`` from the code while the site builds.

Three tables, written as Markdown into ``docs/_generated/`` and included by
``support.md``:

- every name of the array API standard (``_data/array_api_names.csv``: group and the
  version that added it) and whether arraykit has it, linked to its API entry;
- the commonly used PyTorch tensor methods and ``torch.nn.functional`` functions
  (``_data/pytorch_names.csv``) and whether arraykit has them, as a method, a
  ``arraykit.nn.functional`` function or a namespace function, with the behaviour
  differences explained in ``pytorch.md``. When PyTorch is importable the list is
  checked against it (a name PyTorch does not have is a warning); otherwise the
  committed list is used as it is;
- coverage of PyTorch's public names by family (``torch``, ``Tensor``,
  ``nn.functional``, ``nn``, ``optim``, ``optim.lr_scheduler``), counted against
  ``_data/pytorch_<version>_names.json`` (written by ``_data/list_pytorch_names.py``
  from an installed PyTorch), with the names still missing; a name arraykit
  deliberately does not provide is listed with its reason
  (``_data/pytorch_not_provided.csv``: family, name, reason) instead of as missing.
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
        if getattr(ak, name, None) is getattr(ak.nn.functional, name):  # documented once, there
            return f"{{py:obj}}`arraykit.nn.functional.{name} <arraykit.{name}>`"
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


COVERAGE = (  # family of pytorch_<version>_names.json, where arraykit keeps it, how named
    ("torch", "arraykit", "`torch.{}`"),
    ("Tensor", "arraykit.Tensor", "`Tensor.{}`"),
    ("nn.functional", "arraykit.nn.functional", "`F.{}`"),
    ("nn", "arraykit.nn", "`nn.{}`"),
    ("optim", "arraykit.optim", "`optim.{}`"),
    ("optim.lr_scheduler", "arraykit.optim.lr_scheduler", "`lr_scheduler.{}`"),
)


def coverage_table(ak, names, reasons=None):
    """Markdown: for each PyTorch family, how many of its public names arraykit has,
    how many it deliberately does not provide (``reasons``: ``{(family, name): reason}``),
    and the names still missing."""
    import importlib

    reasons = reasons or {}
    lines = [f"Counted against PyTorch {names['torch_version']}'s public names.\n",
             "| PyTorch | names | in arraykit | share | not provided, with a reason |", "|---|---|---|---|---|"]
    missing_lists, reason_lists = [], []
    for family, where, spelling in COVERAGE:
        module, _, attr = where.partition(".Tensor")
        home = importlib.import_module(module)
        home = getattr(home, "Tensor") if where.endswith(".Tensor") else home
        lookup = inspect.getattr_static if where.endswith(".Tensor") else getattr
        wanted = names[family]
        absent = [n for n in wanted if lookup(home, n, None) is None]
        declined = [n for n in absent if (family, n) in reasons]
        missing = [n for n in absent if (family, n) not in reasons]
        for n in wanted:
            if (family, n) in reasons and n not in absent:
                logger.warning("pytorch_not_provided.csv gives a reason for %s, which arraykit has",
                               spelling.format(n))
        have = len(wanted) - len(absent)
        lines.append(f"| `{family}` | {len(wanted)} | {have} | {have / len(wanted):.0%} | {len(declined)} |")
        missing_lists.append(f"**`{family}`**, missing ({len(missing)}): "
                             + (", ".join(spelling.format(n) for n in missing) or "none"))
        reason_lists.extend(f"| {spelling.format(n)} | {reasons[family, n]} |" for n in declined)
    text = "\n".join(lines) + "\n\n" + "\n\n".join(missing_lists) + "\n"
    if reason_lists:
        text += ("\nNot provided, and why:\n\n| PyTorch | reason |\n|---|---|\n"
                 + "\n".join(reason_lists) + "\n")
    return text


def not_provided(path):
    """``{(family, name): reason}`` from ``pytorch_not_provided.csv``."""
    return {(r["family"], r["name"]): r["reason"] for r in _rows(path)}


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
    import json

    listed = sorted(data.glob("pytorch_*_names.json"))[-1]
    _write(out / "pytorch_coverage.md", coverage_table(ak, json.loads(listed.read_text()),
                                                       not_provided(data / "pytorch_not_provided.csv")))
    for kind in ("method", "functional"):
        _write(out / f"pytorch_{kind}_table.md", pytorch_table(ak, torch_rows, kind, torch_names))


def setup(app):
    app.connect("builder-inited", write_tables, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
