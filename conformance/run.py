"""Run the array API conformance suite (data-apis/array-api-tests) against arraykit.

Usage::

    ARRAY_API_TESTS_DIR=/path/to/array-api-tests \\
        python conformance/run.py [--max-examples N] [--seed S] [--api-version 2025.12]
                                  [-n WORKERS] [--timeout SECONDS] [--report-dir DIR]
                                  [--json-out PATH] [extra pytest args]

The suite is never vendored: it is read from the checkout named by the environment
variable ``ARRAY_API_TESTS_DIR`` (with the specification checked out at ``array-api/``
inside it). When the variable is unset the runner says so and exits 0.

The runner passes the entries of ``conformance/expected_failures.txt`` (one test id per
line followed by ``  # reason``; a line without a reason is rejected) to the suite's
``--xfails-file`` option, runs pytest from the suite's root with
``ARRAY_API_TESTS_MODULE=arraykit``, and writes ``conformance/report.md`` and
``conformance/report.json`` from the suite's JSON report. Its exit status is pytest's.

Every run uses an explicit hypothesis seed (``--seed``, random when omitted) and
records it in the report: with a seed, hypothesis neither reads nor writes its example
database, so a report depends only on the commits, the options and the seed, never on
failures an earlier run left in the suite checkout's ``.hypothesis/`` directory.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXPECTED_FAILURES = HERE / "expected_failures.txt"
REPORT_MD = HERE / "report.md"
REPORT_JSON = HERE / "report.json"
ENV_VAR = "ARRAY_API_TESTS_DIR"
DEFAULT_API_VERSION = "2025.12"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
_ENTRY = re.compile(r"^(?P<id>\S.*?)\s+#(?P<reason>.*)$")
_SKIP_REASON = re.compile(r"Skipped: (?P<reason>.*?)['\"]\)?$")
_COLLECT_ERROR = re.compile(r"^ERROR (?P<path>\S+\.py)(?: - (?P<msg>.*))?$")
MESSAGE_CHARS = 240


@dataclass(frozen=True)
class ExpectedFailure:
    """One entry of the expected-failures file: a suite test id and why it fails."""

    test_id: str
    reason: str


def parse_expected_failures(text: str, source: str = EXPECTED_FAILURES.name) -> list[ExpectedFailure]:
    """Parse expected-failures text: ``<test id>  # <reason>`` per line.

    Blank lines and lines starting with ``#`` are comments. A line without a non-empty
    reason, or a test id listed twice, raises ``ValueError`` naming the line.
    """
    entries: list[ExpectedFailure] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _ENTRY.match(line)
        reason = match.group("reason").strip() if match else ""
        if not reason:
            raise ValueError(
                f"{source}:{lineno}: expected '<test id>  # <reason>', got {raw!r} "
                "(every expected failure must say why it fails)"
            )
        test_id = match.group("id").strip()
        if test_id in seen:
            raise ValueError(
                f"{source}:{lineno}: test id {test_id!r} already listed on line {seen[test_id]}"
            )
        seen[test_id] = lineno
        entries.append(ExpectedFailure(test_id, reason))
    return entries


def load_expected_failures(path: Path = EXPECTED_FAILURES) -> list[ExpectedFailure]:
    """Read and parse the expected-failures file; a missing file means no entries."""
    if not path.exists():
        return []
    return parse_expected_failures(path.read_text(), source=str(path))


def suite_dir_from_env(environ=os.environ) -> Path | None:
    """The suite checkout named by ``ARRAY_API_TESTS_DIR``, or None when unset or empty."""
    value = environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser().resolve() if value else None


def check_suite_dir(suite: Path) -> None:
    """Raise ``FileNotFoundError`` unless ``suite`` looks like an array-api-tests checkout."""
    missing = [p for p in ("array_api_tests", "conftest.py", "array-api") if not (suite / p).exists()]
    if missing:
        raise FileNotFoundError(
            f"{ENV_VAR}={suite} is not an array-api-tests checkout: missing {', '.join(missing)} "
            "(the specification must be checked out at array-api/ inside it)"
        )


def _git(path: Path, *args: str) -> str | None:
    """Output of a git command in ``path``, or None when git fails."""
    try:
        out = subprocess.run(["git", "-C", str(path), *args], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_commit(path: Path) -> str:
    """The commit checked out at ``path``, with ``-dirty`` when tracked files (not
    submodules) are modified, or ``unknown``."""
    commit = _git(path, "rev-parse", "--short=12", "HEAD")
    if not commit:
        return "unknown"
    status = _git(path, "status", "--porcelain", "--untracked-files=no",
                  "--ignore-submodules=all")
    return commit + ("-dirty" if status else "")


def namespace_module(api_version):
    """The module the suite tests: ``arraykit`` (2025.12) or its older-version namespace."""
    if api_version == "2025.12":
        return "arraykit"
    return "arraykit.api_" + api_version.replace(".", "_")


def build_pytest_command(args: argparse.Namespace, extra: list[str], xfails_file: Path,
                         json_file: Path) -> list[str]:
    """The pytest command line run from the suite's root.

    Extra arguments naming suite paths (``array_api_tests/test_x.py...``) replace the
    default target, the whole ``array_api_tests`` package.
    """
    targets = [] if any(a.startswith("array_api_tests") for a in extra) else ["array_api_tests"]
    cmd = [sys.executable, "-m", "pytest", *targets,
           "-n", str(args.workers),
           "--max-examples", str(args.max_examples),
           f"--hypothesis-seed={args.seed}",
           "--xfails-file", str(xfails_file),
           "--json-report", f"--json-report-file={json_file}",
           "-p", "no:cacheprovider", "-q", "-rfE"]
    if not args.keep_deadline:
        cmd.append("--disable-deadline")
    return cmd + extra


def _first_line(text: str | None) -> str:
    """The first non-empty line of ``text``, cut to ``MESSAGE_CHARS`` characters."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 3] + "..."
    return ""


def _test_message(test: dict) -> str:
    """The key error line of one test from the JSON report (crash message or longrepr)."""
    for stage in ("call", "setup", "teardown"):
        info = test.get(stage) or {}
        if info.get("outcome") in ("failed", "error") or (stage == "call" and "crash" in info):
            crash = info.get("crash") or {}
            if crash.get("message"):
                return _first_line(crash["message"])
            return _error_line(info.get("longrepr"))
    return ""


def _error_line(longrepr: str | None) -> str:
    """The first ``E   ...`` line of a pytest traceback, else its first line."""
    for line in (longrepr or "").splitlines():
        if line.startswith("E ") and line[1:].strip():
            return _first_line(line[1:])
    return _first_line(longrepr)


def _file_of(nodeid: str) -> str:
    """The test file part of a pytest node id."""
    return nodeid.split("::", 1)[0]


def _skip_reason(test: dict) -> str:
    """Why a test was skipped (the suite's reason text), from the JSON report."""
    for stage in ("setup", "call"):
        longrepr = (test.get(stage) or {}).get("longrepr") or ""
        match = _SKIP_REASON.search(longrepr.strip().splitlines()[-1] if longrepr.strip() else "")
        if match:
            return match.group("reason")
    return "unknown"


def collection_errors(output: str) -> list[dict]:
    """Test files that failed to collect, from pytest's short summary (xdist omits them
    from the JSON report)."""
    errors = []
    for line in output.splitlines():
        match = _COLLECT_ERROR.match(line.strip())
        if match:
            errors.append({"id": match.group("path"), "outcome": "error",
                           "message": _first_line(match.group("msg"))})
    return errors


def summarize(raw: dict, meta: dict, output: str = "") -> dict:
    """Condense the suite's JSON report into totals, a per-file table and failures."""
    totals = dict.fromkeys(OUTCOMES, 0)
    per_file: dict[str, dict[str, int]] = {}
    failures: list[dict] = []
    xpassed: list[str] = []
    skip_reasons: dict[str, int] = {}
    for test in raw.get("tests", []):
        outcome = test.get("outcome", "error")
        outcome = outcome if outcome in totals else "error"
        totals[outcome] += 1
        row = per_file.setdefault(_file_of(test["nodeid"]), dict.fromkeys(OUTCOMES, 0))
        row[outcome] += 1
        if outcome in ("failed", "error"):
            failures.append({"id": test["nodeid"], "outcome": outcome,
                             "message": _test_message(test)})
        elif outcome == "xpassed":
            xpassed.append(test["nodeid"])
        elif outcome == "skipped":
            reason = _skip_reason(test)
            skip_reasons[reason] = skip_reasons.get(reason, 0) + 1
    collected = []
    for collector in raw.get("collectors", []):
        if collector.get("outcome") == "failed":
            collected.append({"id": collector["nodeid"], "outcome": "error",
                              "message": _error_line(collector.get("longrepr"))})
    collected += collection_errors(output)
    known = {f["id"] for f in failures}
    for error in collected:
        if error["id"] in known:
            continue
        known.add(error["id"])
        failures.append(error)
        totals["error"] += 1
        per_file.setdefault(_file_of(error["id"]), dict.fromkeys(OUTCOMES, 0))["error"] += 1
    failures.sort(key=lambda f: f["id"])
    totals["total"] = sum(totals[o] for o in OUTCOMES)
    return {"meta": meta, "totals": totals,
            "per_file": dict(sorted(per_file.items())),
            "skip_reasons": dict(sorted(skip_reasons.items(), key=lambda kv: -kv[1])),
            "failures": failures, "xpassed": xpassed}


def _escape(text: str) -> str:
    """Make text safe inside a Markdown table cell or inline code."""
    return text.replace("|", "\\|").replace("`", "'")


def render_markdown(summary: dict) -> str:
    """The Markdown report written to ``conformance/report.md``."""
    meta, totals = summary["meta"], summary["totals"]
    out = ["# arraykit array API conformance report", "",
           "Written by `conformance/run.py`; do not edit by hand.", "",
           "| | |", "|---|---|"]
    for key, label in (("api_version", "API version"), ("module", "Module"),
                       ("arraykit_commit", "arraykit commit"),
                       ("suite_commit", "Suite commit (data-apis/array-api-tests)"),
                       ("spec_commit", "Spec commit (data-apis/array-api)"),
                       ("date", "Date (UTC)"), ("wall_time_s", "Wall time (s)"),
                       ("workers", "Workers (-n)"), ("max_examples", "Max examples"),
                       ("seed", "Hypothesis seed"), ("deadline", "Hypothesis deadline"),
                       ("expected_failures", "Expected-failure entries"),
                       ("exit_code", "pytest exit code"), ("command", "Command")):
        if key in meta:
            value = meta[key]
            value = f"`{_escape(value)}`" if key == "command" else _escape(str(value))
            out.append(f"| {label} | {value} |")
    if meta.get("interrupted"):
        out += ["", f"**The run was interrupted ({_escape(meta['interrupted'])}); "
                "totals cover only the tests that finished.**"]
    out += ["", "## Totals", "",
            "| total | passed | failed | error | skipped | xfailed | xpassed |",
            "|---|---|---|---|---|---|---|",
            "| " + " | ".join(str(totals[k]) for k in ("total",) + OUTCOMES) + " |",
            "", "## Per test file", "",
            "| file | passed | failed | error | skipped | xfailed | xpassed |",
            "|---|---|---|---|---|---|---|"]
    for path, row in summary["per_file"].items():
        out.append(f"| {path} | " + " | ".join(str(row[k]) for k in OUTCOMES) + " |")
    if summary.get("skip_reasons"):
        out += ["", "## Skip reasons", "", "| reason | tests |", "|---|---|"]
        out += [f"| {_escape(r)} | {n} |" for r, n in summary["skip_reasons"].items()]
    failures = summary["failures"]
    out += ["", f"## Failing tests ({len(failures)})", ""]
    if failures:
        out += [f"- `{_escape(f['id'])}`" + (f" — {_escape(f['message'])}" if f["message"] else "")
                for f in failures]
    else:
        out.append("None.")
    if summary["xpassed"]:
        out += ["", f"## Expected failures that passed ({len(summary['xpassed'])})", "",
                "Listed in expected_failures.txt but passed this run; remove an entry once "
                "it passes consistently.", ""]
        out += [f"- `{_escape(i)}`" for i in summary["xpassed"]]
    return "\n".join(out) + "\n"


def write_reports(summary: dict, md_path: Path = REPORT_MD, json_path: Path = REPORT_JSON) -> None:
    """Write the Markdown and JSON reports."""
    md_path.write_text(render_markdown(summary))
    json_path.write_text(json.dumps(summary, indent=1) + "\n")


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Runner options; unknown arguments are passed on to pytest."""
    parser = argparse.ArgumentParser(
        description="Run data-apis/array-api-tests against arraykit "
                    f"(suite location from ${ENV_VAR}).")
    parser.add_argument("--max-examples", type=int, default=20,
                        help="hypothesis examples per test (default 20)")
    parser.add_argument("--seed", type=int, default=None,
                        help="hypothesis seed (default: a random one); recorded in the report, "
                             "so a run can be repeated exactly")
    parser.add_argument("--api-version", default=DEFAULT_API_VERSION,
                        help=f"ARRAY_API_TESTS_VERSION (default {DEFAULT_API_VERSION})")
    parser.add_argument("-n", "--workers", default=str(os.cpu_count() or 1),
                        help="pytest-xdist workers (default: number of CPUs)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="interrupt the run after this many seconds and report what finished")
    parser.add_argument("--keep-deadline", action="store_true",
                        help="keep the suite's 800 ms hypothesis deadline (off by default: "
                             "first calls include jit compilation)")
    parser.add_argument("--report-dir", type=Path, default=HERE,
                        help="where to write report.md and report.json (default conformance/)")
    parser.add_argument("--json-out", type=Path, default=None,
                        help="also keep the suite's full JSON report at this path")
    args, extra = parser.parse_known_args(argv)
    if args.seed is None:
        args.seed = random.randrange(2**32)
    return args, extra


def _run_pytest(cmd: list[str], cwd: Path, env: dict, timeout: float | None) -> tuple[int, str, str]:
    """Run pytest, echoing its output; on timeout send SIGINT so it still writes its report.

    Returns (exit code, combined output, interruption note or "").
    """
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    chunks: list[str] = []

    def pump() -> None:
        for line in proc.stdout:
            chunks.append(line)
            sys.stdout.write(line)
            sys.stdout.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    note = ""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        note = f"timeout after {timeout:g} s"
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    reader.join(timeout=30)
    return proc.returncode, "".join(chunks), note


def main(argv: list[str] | None = None, environ=os.environ) -> int:
    """Entry point; returns the process exit status."""
    args, extra = parse_args(sys.argv[1:] if argv is None else argv)
    suite = suite_dir_from_env(environ)
    if suite is None:
        print(f"conformance: {ENV_VAR} is not set; skipping the array API conformance suite.\n"
              f"Set it to a checkout of data-apis/array-api-tests (with the spec at array-api/).")
        return 0
    try:
        check_suite_dir(suite)
        entries = load_expected_failures()
    except (FileNotFoundError, ValueError) as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="arraykit-conformance-") as tmp:
        xfails_file = Path(tmp) / "xfails.txt"
        xfails_file.write_text("".join(e.test_id + "\n" for e in entries))
        json_file = Path(tmp) / "report.json"
        cmd = build_pytest_command(args, extra, xfails_file, json_file)
        module = namespace_module(args.api_version)
        env = dict(environ)
        env.update(ARRAY_API_TESTS_MODULE=module, ARRAY_API_TESTS_VERSION=args.api_version,
                   PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH"))
                                              if p))
        shown = " ".join(["python"] + cmd[1:])
        print(f"conformance: cd {suite} && ARRAY_API_TESTS_MODULE={module} "
              f"ARRAY_API_TESTS_VERSION={args.api_version} {shown}", flush=True)
        start = time.monotonic()
        date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
        code, output, note = _run_pytest(cmd, suite, env, args.timeout)
        wall = time.monotonic() - start
        raw = json.loads(json_file.read_text()) if json_file.exists() else {}
        if args.json_out is not None and json_file.exists():
            args.json_out.write_text(json_file.read_text())
    if not raw:
        note = note or "pytest wrote no JSON report"
        print("conformance: " + note + "; see the output above", file=sys.stderr)
    meta = {"api_version": args.api_version, "module": module,
            "arraykit_commit": git_commit(ROOT), "suite_commit": git_commit(suite),
            "spec_commit": git_commit(suite / "array-api"), "date": date,
            "wall_time_s": round(wall, 1), "workers": args.workers,
            "max_examples": args.max_examples, "seed": args.seed,
            "expected_failures": len(entries),
            "exit_code": code,
            "command": " ".join(["python conformance/run.py", "--max-examples",
                                 str(args.max_examples), "--seed", str(args.seed),
                                 "--api-version", args.api_version,
                                 "-n", str(args.workers),
                                 *(["--keep-deadline"] if args.keep_deadline else []), *extra]),
            "deadline": "the suite's (800 ms)" if args.keep_deadline else "disabled"}
    if note:
        meta["interrupted"] = note
    summary = summarize(raw, meta, output)
    args.report_dir.mkdir(parents=True, exist_ok=True)
    md_path = args.report_dir / REPORT_MD.name
    write_reports(summary, md_path, args.report_dir / REPORT_JSON.name)
    t = summary["totals"]
    print(f"conformance: {t['passed']} passed, {t['failed']} failed, {t['error']} errors, "
          f"{t['skipped']} skipped, {t['xfailed']} xfailed, {t['xpassed']} xpassed "
          f"in {wall:.0f} s; report at {md_path}")
    return code


if __name__ == "__main__":
    sys.exit(main())
