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
   scikit-learn subpackage, failures grouped by cause with an example each, and the
   parametrizations that pass on torch but not on arraykit (ids compared with the
   backend's name masked), grouped by arraykit's outcome and message.
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

from scipy_suite import _cell, _git_head, cause

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
    """Run scikit-learn's array-API tests for ``backend``: (outcomes, wall seconds,
    whether it timed out), outcomes as :func:`test_outcomes` gives them."""
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
    timed_out = False
    try:
        proc = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True,
                              text=True, timeout=args.timeout)
        out = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        timed_out = True
        out = f"TIMEOUT after {args.timeout} s\n{e.stdout or ''}"
    wall = time.perf_counter() - start
    log.write(f"===== {backend} ({wall:.0f} s)\n$ {' '.join(cmd)}\n{out[-40000:]}\n")
    log.flush()
    outcomes = test_outcomes(xml, backend)
    xml.unlink(missing_ok=True)
    return outcomes, wall, timed_out


def test_outcomes(xml, backend):
    """``{test id with the backend's name as <backend>: (outcome, message, subpackage)}``
    from the JUnit XML; outcome is passed, failed, errors, skipped or xfailed, the
    subpackage ``linear_model`` for ``[sklearn.]linear_model.tests.test_ridge``."""
    import xml.etree.ElementTree as ET

    results = {}
    try:
        root = ET.parse(xml).getroot()
    except (ET.ParseError, FileNotFoundError):
        return results
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        parts = classname.removeprefix("sklearn.").split(".")
        sub = parts[0] if len(parts) > 2 else "(top level)" if classname else "(collection)"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "errors"
                message = child.get("message") or (child.text or "").strip()
            elif child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
                message = child.get("message") or ""
        test = f"{classname}::{case.get('name', '')}".replace(backend, "<backend>")
        results[test] = (outcome, message, sub)
    return results


_OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed")


def report(results, args, started, python, path):
    """Write the Markdown report of ``results[backend] = (outcomes, wall, timed_out)``."""
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
    counts = {b: collections.Counter(o for o, _, _ in outcomes.values())
              for b, (outcomes, _, _) in results.items()}
    lines += ["## Totals", "", "| run | passed | failed | errors | skipped | xfailed | wall |",
              "|---|---|---|---|---|---|---|"]
    for backend, (_, wall, timed_out) in results.items():
        c = counts[backend]
        lines.append(f"| {backend} | " + " | ".join(str(c[o]) for o in _OUTCOMES)
                     + f" | {wall:.0f} s{' (TIMEOUT)' if timed_out else ''} |")
    per = {b: collections.defaultdict(collections.Counter) for b in results}
    for backend, (outcomes, _, _) in results.items():
        for outcome, _, sub in outcomes.values():
            per[backend][sub][outcome] += 1
    subs = sorted({s for b in per for s in per[b]})
    lines += ["", "## Per subpackage", "", "passed / failed / skipped", "",
              "| subpackage | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for sub in subs:
        cells = [f"{per[b][sub]['passed']} / {per[b][sub]['failed'] + per[b][sub]['errors']} / "
                 f"{per[b][sub]['skipped']}" for b in results]
        lines.append(f"| {sub} | " + " | ".join(cells) + " |")
    for backend, (outcomes, _, _) in results.items():
        groups = collections.defaultdict(list)
        for test, (outcome, message, _) in outcomes.items():
            if outcome in ("failed", "errors"):
                groups[cause(message)].append(test)
        if not groups:
            continue
        lines += ["", f"## Failures and errors of `{backend}`, grouped by cause", "",
                  "| count | cause | example |", "|---|---|---|"]
        for key, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"| {len(tests)} | `{_cell(key)}` | `{_cell(tests[0])}` |")
    if "arraykit" in results and "torch" in results:
        lines += _comparison(results["arraykit"][0], results["torch"][0])
    path.write_text("\n".join(lines) + "\n")


def _comparison(ours, theirs):
    """Report lines: the parametrizations (backend name masked) that pass on torch and
    not on arraykit, grouped by arraykit's outcome and message."""
    groups = collections.defaultdict(list)
    for test, (outcome, _, _) in theirs.items():
        if outcome == "passed" and test in ours and ours[test][0] != "passed":
            groups[(ours[test][0], cause(ours[test][1]))].append(test)
    only_torch = sum(1 for t, (o, _, _) in theirs.items() if o == "passed" and t not in ours)
    lines = ["", "## Passing on torch, not on arraykit", "",
             f"Test ids with the backend's name masked; {only_torch} tests that pass on torch "
             "have no arraykit twin (torch's xpu and mps parametrizations, tests written for "
             "torch alone)."]
    if not groups:
        return lines + ["", "None: every parametrization that passes on torch passes on arraykit."]
    lines += ["", "| count | arraykit's outcome | message | example |", "|---|---|---|---|"]
    for (outcome, message), tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {len(tests)} | {outcome} | `{_cell(message)}` | `{_cell(tests[0])}` |")
    return lines


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
            outcomes, wall, _ = results[backend]
            counts = collections.Counter(o for o, _, _ in outcomes.values())
            print(f"{backend:9s} {dict(counts)} {wall:.0f} s", flush=True)
            report(results, args, started, python, args.report)
    print(f"report: {args.report}; pytest output: {log_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
