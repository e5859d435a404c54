"""scikit-learn's own array-API tests with arraykit as a backend, beside torch.

Run from the repository root::

    .venv/bin/python conformance/sklearn_suite.py                  # arraykit, then torch
    .venv/bin/python conformance/sklearn_suite.py --runs arraykit -k "median" -x

What it does:

1. Makes (or reuses) a virtual environment of its own, by default
   ``~/.cache/arraykit/sklearn-1.9.1`` (``--venv``): scikit-learn 1.9.1 (SKLEARN_VERSION),
   SciPy 1.17.1, torch 2.13.0, array-api-strict, pytest and pytest-xdist from the pip
   index, and this checkout of arraykit installed editable (``pip install -e``), so
   the run tests the working tree. A venv whose scikit-learn is another version, or
   whose arraykit is not this checkout, is rebuilt.
2. Runs ``SCIPY_ARRAY_API=1 pytest --pyargs sklearn -k "array_api and <backend>" -p
   sklearn_plugin -n <workers>``: ``conformance/sklearn_plugin.py`` adds arraykit
   beside torch to ``sklearn.utils._array_api``'s namespace lists at test time (it
   rebinds the functions in memory; no file of scikit-learn is changed), with
   torch's devices (cpu, cuda) and dtypes (float64, float32). The ``-k`` keeps the
   parametrizations of one backend per run; ``torch`` is the comparison run.
3. Collects per-test outcomes in JUnit XML and writes a Markdown report
   (``conformance/sklearn_report.md``): totals and wall time per run, per
   scikit-learn subpackage, and failures grouped by cause with an example each.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy_suite import _cell, _git_head, cause, parse_junit

SKLEARN_VERSION = "1.9.1"
REQUIREMENTS = (f"scikit-learn=={SKLEARN_VERSION}", "scipy==1.17.1", "torch==2.13.0",
                "array-api-strict", "pytest", "pytest-xdist")
RUNS = ("arraykit", "torch")
REPO = Path(__file__).resolve().parent.parent
DEFAULT_REPORT = REPO / "conformance" / "sklearn_report.md"
DEFAULT_VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "arraykit" / (
    f"sklearn-{SKLEARN_VERSION}")

# Finds arraykit without importing it: a broken working tree is the run's finding, not
# a reason to rebuild the venv.
_PROBE = ("import importlib.util, sklearn, torch, scipy, pytest, xdist, array_api_strict;"
          "print(sklearn.__version__, importlib.util.find_spec('arraykit').origin)")


def venv_python(venv):
    """The interpreter of ``venv``."""
    return Path(venv) / "bin" / "python"


def venv_state(venv):
    """What ``venv`` holds: None when it is ready for this checkout, else why not."""
    python = venv_python(venv)
    if not python.exists():
        return f"no venv at {venv}"
    probe = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True,
                           cwd=tempfile.gettempdir(), timeout=300)
    if probe.returncode:
        return f"the venv at {venv} lacks a package: {probe.stderr.strip().splitlines()[-1:]}"
    version, arraykit_file = probe.stdout.split()[:2]
    if version != SKLEARN_VERSION:
        return f"the venv at {venv} has scikit-learn {version}, not {SKLEARN_VERSION}"
    if not Path(arraykit_file).resolve().is_relative_to(REPO):
        return f"the venv at {venv} imports arraykit from {arraykit_file}, not from {REPO}"
    return None


def ensure_venv(venv):
    """Make ``venv`` ready (create it and install REQUIREMENTS and arraykit editable)
    unless it already is; returns its interpreter."""
    reason = venv_state(venv)
    if reason is None:
        print(f"reusing the venv at {venv}", flush=True)
        return venv_python(venv)
    print(f"{reason}: building it", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(venv_python(venv)), "-m", "pip", "install", "-q", *REQUIREMENTS,
                    "-e", str(REPO)], check=True)
    reason = venv_state(venv)
    if reason is not None:
        raise RuntimeError(f"the venv at {venv} is still not ready: {reason}")
    return venv_python(venv)


def run_one(python, backend, args, log):
    """Run scikit-learn's array-API tests for ``backend``: (counts, failures, wall s)."""
    xml = Path(tempfile.mkstemp(suffix=".xml")[1])
    keyword = f"array_api and {backend}" + (f" and ({args.k})" if args.k else "")
    env = dict(os.environ)
    env.update(
        SCIPY_ARRAY_API="1",
        PYTHONPATH=str(REPO / "conformance"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    cmd = [
        str(python), "-m", "pytest", "--pyargs", "sklearn", "-k", keyword,
        "-p", "sklearn_plugin", "-p", "no:cacheprovider", "-q", "--tb=line",
        f"--junitxml={xml}", "-o", "junit_family=xunit1",
        "-W", "ignore::DeprecationWarning", "-W", "ignore::pytest.PytestRemovedIn10Warning",
    ]
    if args.workers > 1:
        cmd += ["-n", str(args.workers)]
    if args.x:
        cmd.append("-x")
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True,
                              text=True, timeout=args.timeout)
        out = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        out = f"TIMEOUT after {args.timeout} s\n{e.stdout or ''}"
    wall = time.perf_counter() - start
    log.write(f"===== {backend} ({wall:.0f} s)\n$ {' '.join(cmd)}\n{out[-40000:]}\n")
    log.flush()
    counts, failures = parse_junit(xml)
    subpackages = subpackage_counts(xml)
    xml.unlink(missing_ok=True)
    if out.startswith("TIMEOUT"):
        counts["timeout"] = 1
    return counts, failures, subpackages, wall


def subpackage_counts(xml):
    """``{subpackage: Counter(outcome)}`` from the JUnit XML, by the test's class name
    (``sklearn.linear_model.tests.test_ridge`` -> ``linear_model``)."""
    import xml.etree.ElementTree as ET

    per = collections.defaultdict(collections.Counter)
    try:
        root = ET.parse(xml).getroot()
    except (ET.ParseError, FileNotFoundError):
        return per
    for case in root.iter("testcase"):
        parts = case.get("classname", "").split(".")
        sub = parts[1] if len(parts) > 2 and parts[0] == "sklearn" else parts[0]
        if sub.startswith("test_"):
            sub = "(top level)"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        per[sub][outcome] += 1
    return per


def report(results, args, started, python, path):
    """Write the Markdown report of ``results[backend] = (counts, failures, subs, wall)``."""
    versions = subprocess.run(
        [str(python), "-c", "import sklearn, scipy, torch, jax, numpy; print(sklearn.__version__,"
         " scipy.__version__, torch.__version__, jax.__version__, numpy.__version__)"],
        capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout.split()
    names = ("scikit-learn", "SciPy", "torch", "jax", "NumPy")
    command = "conformance/sklearn_suite.py " + " ".join(args.argv)
    lines = [
        "# scikit-learn's array-API tests on arraykit, beside torch",
        "",
        f"Written by `.venv/bin/python {command.strip()}` (started {started:%Y-%m-%d %H:%M} "
        f"UTC; arraykit {args.label or _git_head()}; "
        + ", ".join(f"{n} {v}" for n, v in zip(names, versions))
        + f"; Python {platform.python_version()}, {os.cpu_count()}-CPU {platform.machine()} "
        f"machine, {args.workers} pytest-xdist worker(s)). Each run is "
        "`SCIPY_ARRAY_API=1 pytest --pyargs sklearn -k \"array_api and <backend>\" "
        "-p sklearn_plugin`, in the venv the runner makes, with `conformance/sklearn_plugin.py` "
        "adding arraykit beside torch in `sklearn.utils._array_api`'s namespace lists "
        "(devices cpu and cuda, dtypes float64 and float32, as torch). Wall times were "
        "measured on a machine other people used at the same time.",
        "",
    ]
    if args.k or args.x:
        lines += [f"Partial run: -k {args.k!r}, -x {args.x}.", ""]
    lines += ["## Totals", "", "| run | passed | failed | errors | skipped | xfailed | wall |",
              "|---|---|---|---|---|---|---|"]
    for backend, (counts, _, _, wall) in results.items():
        timeout = " (TIMEOUT)" if counts.get("timeout") else ""
        lines.append(f"| {backend} | {counts['passed']} | {counts['failed']} | "
                     f"{counts['errors']} | {counts['skipped']} | {counts['xfailed']} | "
                     f"{wall:.0f} s{timeout} |")
    subs = sorted({s for _, _, per, _ in results.values() for s in per})
    lines += ["", "## Per subpackage", "", "passed / failed / skipped", "",
              "| subpackage | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for sub in subs:
        cells = [f"{per[sub]['passed']} / {per[sub]['failed']} / {per[sub]['skipped']}"
                 for _, _, per, _ in results.values()]
        lines.append(f"| {sub} | " + " | ".join(cells) + " |")
    for backend, (_, failures, _, _) in results.items():
        groups = collections.defaultdict(list)
        for test, outcome, message in failures:
            groups[cause(message)].append(test)
        if not groups:
            continue
        lines += ["", f"## Failures and errors of `{backend}`, grouped by cause", "",
                  "| count | cause | example |", "|---|---|---|"]
        for key, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"| {len(tests)} | `{_cell(key)}` | `{_cell(tests[0])}` |")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    parser.add_argument("-k", default=None, help="a further pytest -k expression")
    parser.add_argument("-x", action="store_true", help="stop each run at its first failure")
    parser.add_argument("-n", "--workers", type=int, default=2,
                        help="pytest-xdist workers (default 2; 1 runs without xdist)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--timeout", type=int, default=7200, help="seconds per run")
    parser.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    parser.add_argument("--log", type=Path, default=None, help="pytest output (default: a temp file)")
    parser.add_argument("--label", default=None,
                        help="what the report says about the arraykit code (default: git HEAD)")
    args = parser.parse_args(argv)
    args.argv = argv
    python = ensure_venv(args.venv)
    started = datetime.datetime.now(datetime.timezone.utc)
    log_path = args.log or Path(tempfile.mkstemp(prefix="arraykit-sklearn-", suffix=".log")[1])
    results = {}
    with open(log_path, "w") as log:
        for backend in args.runs:
            results[backend] = run_one(python, backend, args, log)
            counts, _, _, wall = results[backend]
            print(f"{backend:9s} {dict(counts)} {wall:.0f} s", flush=True)
            report(results, args, started, python, args.report)
    print(f"report: {args.report}; pytest output: {log_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
