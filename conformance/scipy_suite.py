"""SciPy's own array-API tests with arraykit as a backend, beside array_api_strict and torch.

Run from the repository root::

    .venv/bin/python conformance/scipy_suite.py                 # every submodule, every run
    .venv/bin/python conformance/scipy_suite.py --runs arraykit-f64 --submodules ndimage stats -x

What it does:

1. Uses the SciPy installed in this interpreter's environment, which must be the
   version named below (SCIPY_VERSION) with its test files (the wheels ship them).
   Nothing is installed and nothing of SciPy is changed or committed: to get it,
   ``pip install scipy==1.17.1 array-api-strict`` into the environment. When
   SciPy, its tests, pytest or the version do not fit, the runner prints why and
   exits 0 without running anything (a clean skip).
2. Builds a temporary SciPy tree: a directory holding symbolic links to every entry
   of the installed ``scipy`` package except ``conftest.py``, which is a copy with
   arraykit added to SciPy's table of test backends the way ``array_api_strict`` is
   (a ``pytest.param(arraykit, id='arraykit')``; ``'arraykit'`` joins
   ``xp_known_backends``). The patch also treats arraykit as SciPy treats PyTorch:
   ``arraykit.set_default_dtype(arraykit.float64)`` unless ``SCIPY_DEFAULT_DTYPE``
   is ``float32``, and it pins the array API version to 2024.12, as SciPy pins
   array_api_strict (``arraykit.set_array_api_version("2024.12")``: SciPy 1.17's
   ``devices`` fixture computes ``info.devices() + [None]``, the list of 2024.12,
   while 2025.12 made it a tuple).
3. Runs ``pytest <tree>/scipy/<submodule> -m array_api_backends`` per submodule
   with ``SCIPY_ARRAY_API='["<backend>"]'`` (what ``spin test -b <backend>``
   sets), collecting per-test outcomes in JUnit XML, and writes a Markdown report:
   totals per submodule and run, failures grouped by cause (exception type and
   message with numbers and names masked) with examples, wall time per submodule.

Runs: ``arraykit-f64`` (float64 default, as SciPy runs torch), ``arraykit-f32``
(the float32 default a user gets), ``array_api_strict`` and ``torch`` (float64
default, SciPy's own setting), ``torch-f32`` (torch with SciPy's
``SCIPY_DEFAULT_DTYPE=float32``, the counterpart of ``arraykit-f32``).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

SCIPY_VERSION = "1.17.1"
SUBMODULES = (
    "cluster", "constants", "differentiate", "fft", "integrate", "interpolate", "linalg",
    "ndimage", "optimize", "signal", "spatial", "special", "stats",
)
RUNS = {  # name -> (backend id in SciPy's conftest, SCIPY_DEFAULT_DTYPE)
    "arraykit-f64": ("arraykit", "float64"),
    "arraykit-f32": ("arraykit", "float32"),
    "array_api_strict": ("array_api_strict", "float64"),
    "torch": ("torch", "float64"),
    "torch-f32": ("torch", "float32"),
}
REPO = Path(__file__).resolve().parent.parent
DEFAULT_REPORT = REPO / "conformance" / "scipy_report.md"

_ANCHOR = "    xp_available_backend_ids = {p.id for p in xp_available_backends}\n"
_KNOWN = "xp_known_backends = {'numpy', 'array_api_strict', 'torch', 'cupy', 'jax.numpy',\n"
_BACKEND = """\
    try:  # added by arraykit's conformance/scipy_suite.py
        import arraykit
        arraykit.set_array_api_version('2024.12')  # devices() is a list, as SciPy expects
        xp_available_backends.append(
            pytest.param(arraykit, id='arraykit', marks=pytest.mark.array_api_backends))
        _ak_default = os.getenv('SCIPY_DEFAULT_DTYPE', default='float64')
        if _ak_default == 'float64':
            arraykit.set_default_dtype(arraykit.float64)
        elif _ak_default != 'float32':
            raise ValueError(f"SCIPY_DEFAULT_DTYPE must be float64 or float32, got {_ak_default}")
    except ImportError:
        pass

"""


def why_not():
    """None when the suite can run here, else the reason it cannot."""
    try:
        import pytest  # noqa: F401
        import scipy
    except ImportError as e:
        return f"{e.name} is not installed (pip install scipy=={SCIPY_VERSION} pytest)"
    if scipy.__version__ != SCIPY_VERSION:
        return f"SciPy {scipy.__version__} is installed; this runner is written for {SCIPY_VERSION}"
    root = Path(scipy.__file__).parent
    conftest = root / "conftest.py"
    if not conftest.is_file() or not (root / "ndimage" / "tests").is_dir():
        return f"the SciPy at {root} has no test files (conftest.py, */tests)"
    text = conftest.read_text()
    if _ANCHOR not in text or _KNOWN not in text:
        return "SciPy's conftest.py does not have the backend table this runner patches"
    return None


def build_tree(where):
    """``where/scipy``: links to the installed SciPy, with a patched conftest.py."""
    import scipy

    src = Path(scipy.__file__).parent
    dst = Path(where) / "scipy"
    dst.mkdir()
    for entry in src.iterdir():
        if entry.name not in ("conftest.py", "__pycache__"):
            (dst / entry.name).symlink_to(entry)
    text = (src / "conftest.py").read_text()
    text = text.replace(_KNOWN, _KNOWN.replace("'numpy', ", "'numpy', 'arraykit', "))
    text = text.replace(_ANCHOR, _BACKEND + _ANCHOR)
    (dst / "conftest.py").write_text(text)
    return dst


def run_one(tree, submodule, run, extra, timeout, log):
    """Run one submodule's array-API tests for ``run``: (counts, failures, wall seconds)."""
    backend, default = RUNS[run]
    xml = Path(tempfile.mkstemp(suffix=".xml")[1])
    env = dict(os.environ)
    env.update(
        SCIPY_ARRAY_API=json.dumps([backend]),
        SCIPY_DEFAULT_DTYPE=default,
        PYTHONPATH=os.pathsep.join([str(tree.parent), str(REPO)]),
        PYTHONDONTWRITEBYTECODE="1",
    )
    cmd = [
        sys.executable, "-m", "pytest", str(tree / submodule), "-m", "array_api_backends",
        "-q", "-p", "no:cacheprovider", "--rootdir", str(tree), f"--junitxml={xml}",
        "-o", "junit_family=xunit1", "--tb=line", "-W", "ignore::DeprecationWarning", *extra,
    ]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=tree.parent, capture_output=True, text=True,
                              timeout=timeout)
        out = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        out = f"TIMEOUT after {timeout} s\n{e.stdout or ''}"
    wall = time.perf_counter() - start
    log.write(f"===== {run} {submodule} ({wall:.0f} s)\n{out[-20000:]}\n")
    log.flush()
    counts, failures = parse_junit(xml)
    xml.unlink(missing_ok=True)
    if "TIMEOUT" in out[:20]:
        counts["timeout"] = 1
    return counts, failures, wall


def parse_junit(path):
    """(counts per outcome, [(test id, outcome, message)]) from a JUnit XML file."""
    counts = collections.Counter()
    failures = []
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, FileNotFoundError):
        return counts, failures
    for case in root.iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        message = ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "errors"
                message = child.get("message") or (child.text or "").strip().splitlines()[-1:]
                if isinstance(message, list):
                    message = message[0] if message else ""
            elif child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        counts[outcome] += 1
        if outcome in ("failed", "errors"):
            failures.append((test, outcome, message))
    return counts, failures


_MASKS = (
    (re.compile(r"0x[0-9a-f]+"), "0x…"),
    (re.compile(r"(?<![\w.])[-+]?\d+(\.\d*)?(e[-+]?\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
)


def cause(message):
    """A failure message reduced to its cause: the first line, numbers masked."""
    line = (message or "").strip().splitlines()[0] if message else "(no message)"
    line = line.split(" where ")[0]
    for pattern, repl in _MASKS:
        line = pattern.sub(repl, line)
    return line[:160]


def report(results, walls, args, started, path):
    """Write the Markdown report of ``results[run][submodule] = (counts, failures)``."""
    runs = list(results)
    lines = [
        "# SciPy's array-API test suite on arraykit",
        "",
        f"SciPy {SCIPY_VERSION}, `pytest scipy/<submodule> -m array_api_backends` with "
        "`SCIPY_ARRAY_API='[\"<backend>\"]'`, written by `conformance/scipy_suite.py` "
        f"(started {started:%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}). arraykit: "
        f"{args.label or _git_head()}; runs: " + ", ".join(f"`{r}`" for r in runs) + ".",
        "",
        "`arraykit-f64` treats arraykit as SciPy treats PyTorch (`set_default_dtype(float64)`); "
        "`arraykit-f32` keeps arraykit's float32 default, as a user gets it. Both run with "
        "`arraykit.set_array_api_version('2024.12')`, as SciPy pins array_api_strict to "
        "2024.12: SciPy's `devices` fixture does `info.devices() + [None]` (a list in "
        "2024.12; the 2025.12 standard made it a tuple, which arraykit returns by default).",
        "",
    ]
    if args.k or args.x or args.submodules != list(SUBMODULES):
        lines += [f"Partial run: submodules {args.submodules}, -k {args.k!r}, -x {args.x}.", ""]
    lines += ["## Totals", "", "| run | passed | failed | errors | skipped | xfailed | wall |",
              "|---|---|---|---|---|---|---|"]
    for run in runs:
        total = collections.Counter()
        for counts, _ in results[run].values():
            total.update(counts)
        wall = sum(walls[run].values())
        lines.append(f"| {run} | {total['passed']} | {total['failed']} | {total['errors']} | "
                     f"{total['skipped']} | {total['xfailed']} | {wall:.0f} s |")
    lines += ["", "## Per submodule", "",
              "passed / failed / errors / skipped, wall time", "",
              "| submodule | " + " | ".join(runs) + " |", "|---|" + "---|" * len(runs)]
    for sub in args.submodules:
        cells = []
        for run in runs:
            counts, _ = results[run].get(sub, (collections.Counter(), []))
            extra = " TIMEOUT" if counts.get("timeout") else ""
            cells.append(f"{counts['passed']} / {counts['failed']} / {counts['errors']} / "
                         f"{counts['skipped']}, {walls[run].get(sub, 0):.0f} s{extra}")
        lines.append(f"| {sub} | " + " | ".join(cells) + " |")
    for run in runs:
        groups = collections.defaultdict(list)
        for sub, (_, failures) in results[run].items():
            for test, outcome, message in failures:
                groups[cause(message)].append((sub, test, outcome))
        if not groups:
            continue
        lines += ["", f"## Failures and errors of `{run}`, grouped by cause", "",
                  "| count | cause | submodules | example |", "|---|---|---|---|"]
        for key, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            subs = ", ".join(sorted({s for s, _, _ in items}))
            example = items[0][1].split("scipy.")[-1]
            lines.append(f"| {len(items)} | `{_cell(key)}` | {subs} | `{_cell(example)}` |")
    path.write_text("\n".join(lines) + "\n")


def _cell(text):
    return text.replace("|", "\\|").replace("`", "'")


def _git_head():
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "arraykit"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{out}{' + working-tree changes' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return "(unknown commit)"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--submodules", nargs="+", choices=SUBMODULES, default=list(SUBMODULES))
    parser.add_argument("-k", default=None, help="pytest -k expression")
    parser.add_argument("-x", action="store_true", help="stop each run at its first failure")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per submodule run")
    parser.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    parser.add_argument("--log", type=Path, default=None, help="pytest output (default: a temp file)")
    parser.add_argument("--label", default=None,
                        help="what the report says about the arraykit code (default: git HEAD)")
    args = parser.parse_args(argv)
    reason = why_not()
    if reason:
        print(f"SciPy suite SKIPPED: {reason}")
        return 0
    extra = (["-k", args.k] if args.k else []) + (["-x"] if args.x else [])
    started = datetime.datetime.now(datetime.timezone.utc)
    where = tempfile.mkdtemp(prefix="arraykit-scipy-")
    log_path = args.log or Path(where + ".log")
    results = {run: {} for run in args.runs}
    walls = {run: {} for run in args.runs}
    try:
        tree = build_tree(where)
        with open(log_path, "w") as log:
            for run in args.runs:
                for sub in args.submodules:
                    counts, failures, wall = run_one(tree, sub, run, extra, args.timeout, log)
                    results[run][sub] = (counts, failures)
                    walls[run][sub] = wall
                    print(f"{run:17s} {sub:14s} {dict(counts)} {wall:.0f} s", flush=True)
                    report(results, walls, args, started, args.report)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(f"report: {args.report}; pytest output: {log_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
