"""Tests of the conformance runner's own logic (conformance/run.py); no suite run."""

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[1] / "conformance" / "run.py"
_spec = importlib.util.spec_from_file_location("conformance_run", RUNNER)
run = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = run
_spec.loader.exec_module(run)


def test_expected_failures_entries_with_reasons():
    text = (
        "# header comment\n"
        "\n"
        "array_api_tests/test_a.py::test_x  # needs complex sqrt branch cuts\n"
        "array_api_tests/test_special_cases.py::test_binary[add(x1_i is -0) -> +0]  #  signed zero\n"
        "array_api_tests/test_b.py #reason without spaces after hash\n"
    )
    entries = run.parse_expected_failures(text)
    assert entries == [
        run.ExpectedFailure("array_api_tests/test_a.py::test_x", "needs complex sqrt branch cuts"),
        run.ExpectedFailure(
            "array_api_tests/test_special_cases.py::test_binary[add(x1_i is -0) -> +0]",
            "signed zero"),
        run.ExpectedFailure("array_api_tests/test_b.py", "reason without spaces after hash"),
    ]


@pytest.mark.parametrize("line", [
    "array_api_tests/test_a.py::test_x",
    "array_api_tests/test_a.py::test_x  #",
    "array_api_tests/test_a.py::test_x  #   ",
    "array_api_tests/test_a.py::test_x# no space before the hash",
])
def test_expected_failures_rejects_lines_without_reason(line):
    with pytest.raises(ValueError, match=r"expected_failures.txt:2: .*reason"):
        run.parse_expected_failures("# header\n" + line + "\n")


def test_expected_failures_rejects_duplicates():
    text = "array_api_tests/test_a.py::t  # one\narray_api_tests/test_a.py::t  # two\n"
    with pytest.raises(ValueError, match="already listed on line 1"):
        run.parse_expected_failures(text)


def test_committed_expected_failures_file_parses():
    assert isinstance(run.load_expected_failures(), list)


def test_missing_expected_failures_file_means_none(tmp_path):
    assert run.load_expected_failures(tmp_path / "absent.txt") == []


def test_skips_cleanly_when_env_var_unset(capsys, monkeypatch):
    def no_run(*args, **kwargs):
        raise AssertionError("pytest must not be launched")

    monkeypatch.setattr(run, "_run_pytest", no_run)
    assert run.main([], environ={}) == 0
    assert run.main(["--max-examples", "5"], environ={run.ENV_VAR: "  "}) == 0
    out = capsys.readouterr().out
    assert "ARRAY_API_TESTS_DIR is not set" in out and "skipping" in out


def test_reports_written_to_report_dir(tmp_path, monkeypatch):
    suite = tmp_path / "suite"
    for sub in ("array_api_tests", "array-api"):
        (suite / sub).mkdir(parents=True)
    (suite / "conftest.py").write_text("")
    seen = {}

    def fake_run(cmd, cwd, env, timeout):
        seen.update(cwd=cwd, env=env, cmd=cmd)
        json_file = Path(next(a for a in cmd if a.startswith("--json-report-file="))
                         .split("=", 1)[1])
        json_file.write_text(json.dumps(FAKE_REPORT))
        return 1, OUTPUT, ""

    monkeypatch.setattr(run, "_run_pytest", fake_run)
    out_dir = tmp_path / "out"
    code = run.main(["--report-dir", str(out_dir), "--api-version", "2024.12", "-n", "1"],
                    environ={run.ENV_VAR: str(suite)})
    assert code == 1 and seen["cwd"] == suite
    assert seen["env"]["ARRAY_API_TESTS_MODULE"] == "arraykit.api_2024_12"
    assert seen["env"]["ARRAY_API_TESTS_VERSION"] == "2024.12"
    xfails = Path(seen["cmd"][seen["cmd"].index("--xfails-file") + 1])
    assert not xfails.exists()
    summary = json.loads((out_dir / "report.json").read_text())
    assert summary["totals"]["failed"] == 2 and summary["meta"]["api_version"] == "2024.12"
    assert "## Per test file" in (out_dir / "report.md").read_text()
    assert "--keep-deadline" not in summary["meta"]["command"]
    assert summary["meta"]["deadline"] == "disabled"
    run.main(["--report-dir", str(out_dir), "-n", "1", "--keep-deadline"],
             environ={run.ENV_VAR: str(suite)})
    assert "--disable-deadline" not in seen["cmd"]
    summary = json.loads((out_dir / "report.json").read_text())
    assert summary["meta"]["command"].endswith("-n 1 --keep-deadline")
    assert "| Hypothesis deadline | the suite's (800 ms) |" in (out_dir / "report.md").read_text()


def test_bad_suite_dir_is_an_error(tmp_path, capsys):
    assert run.main([], environ={run.ENV_VAR: str(tmp_path)}) == 2
    assert "not an array-api-tests checkout" in capsys.readouterr().err


def test_pytest_command_and_extra_args(tmp_path):
    args, extra = run.parse_args(["-n", "3", "--max-examples", "7", "-k", "abs",
                                  "--api-version", "2024.12"])
    assert (args.workers, args.max_examples, args.api_version) == ("3", 7, "2024.12")
    cmd = run.build_pytest_command(args, extra, tmp_path / "x.txt", tmp_path / "r.json")
    assert cmd[1:4] == ["-m", "pytest", "array_api_tests"]
    assert cmd[cmd.index("-n") + 1] == "3"
    assert cmd[cmd.index("--max-examples") + 1] == "7"
    assert cmd[cmd.index("--xfails-file") + 1] == str(tmp_path / "x.txt")
    assert f"--json-report-file={tmp_path / 'r.json'}" in cmd
    assert "--disable-deadline" in cmd and cmd[-2:] == ["-k", "abs"]
    assert 0 <= args.seed < 2**32 and f"--hypothesis-seed={args.seed}" in cmd
    seeded, _ = run.parse_args(["--seed", "1234"])
    assert seeded.seed == 1234
    narrowed = run.build_pytest_command(
        argparse.Namespace(workers="1", max_examples=1, keep_deadline=True, seed=5),
        ["array_api_tests/test_constants.py"], tmp_path / "x.txt", tmp_path / "r.json")
    assert "array_api_tests" not in narrowed and "--disable-deadline" not in narrowed
    assert narrowed[-1] == "array_api_tests/test_constants.py"


def _test(nodeid, outcome, message=None, stage="call"):
    entry = {"nodeid": nodeid, "outcome": outcome,
             "setup": {"outcome": "passed"}, "call": {"outcome": outcome}}
    if message is not None:
        entry[stage] = {"outcome": "failed", "crash": {"message": message}}
        if stage == "setup":
            del entry["call"]
    return entry


FAKE_REPORT = {
    "tests": [
        _test("array_api_tests/test_a.py::test_1", "passed"),
        _test("array_api_tests/test_a.py::test_2", "failed",
              "AttributeError: module 'arraykit' has no attribute 'fft'\nmore lines"),
        dict(_test("array_api_tests/test_a.py::test_3", "skipped"),
             setup={"outcome": "skipped",
                    "longrepr": "('/suite/array_api_tests/test_a.py', 12, 'Skipped: flaky')"}),
        _test("array_api_tests/test_b.py::test_1[x|y]", "xfailed"),
        _test("array_api_tests/test_b.py::test_2", "xpassed"),
        _test("array_api_tests/test_b.py::test_0", "error", "fixture blew up", stage="setup"),
        {"nodeid": "array_api_tests/test_b.py::test_4", "outcome": "failed",
         "call": {"outcome": "failed",
                  "longrepr": "def f():\n>   assert x\nE   AssertionError: out.dtype=int32\nE   more"}},
    ],
}
FAKE_REPORT_COLLECTORS = {
    "collectors": [
        {"nodeid": "", "outcome": "passed"},
        {"nodeid": "array_api_tests/test_d.py", "outcome": "failed",
         "longrepr": "array_api_tests/test_d.py:72: in <module>\n    x = xp.f()\n"
                     "E   AttributeError: module 'arraykit' has no attribute 'f'"},
    ],
    "tests": [_test("array_api_tests/test_e.py::test_1", "passed")],
}
OUTPUT = ("FAILED array_api_tests/test_a.py::test_2 - AttributeError\n"
          "ERROR array_api_tests/test_c.py - ImportError: cannot import name 'fft'\n")


def test_summary_from_fake_json_report():
    summary = run.summarize(FAKE_REPORT, {"api_version": "2025.12"}, OUTPUT)
    t = summary["totals"]
    assert (t["total"], t["passed"], t["failed"], t["error"], t["skipped"], t["xfailed"],
            t["xpassed"]) == (8, 1, 2, 2, 1, 1, 1)
    assert summary["per_file"]["array_api_tests/test_a.py"] == {
        "passed": 1, "failed": 1, "error": 0, "skipped": 1, "xfailed": 0, "xpassed": 0}
    assert summary["per_file"]["array_api_tests/test_c.py"]["error"] == 1
    failures = {f["id"]: f["message"] for f in summary["failures"]}
    assert failures == {
        "array_api_tests/test_a.py::test_2":
            "AttributeError: module 'arraykit' has no attribute 'fft'",
        "array_api_tests/test_b.py::test_0": "fixture blew up",
        "array_api_tests/test_b.py::test_4": "AssertionError: out.dtype=int32",
        "array_api_tests/test_c.py": "ImportError: cannot import name 'fft'",
    }
    assert [f["id"] for f in summary["failures"]] == sorted(failures)
    assert summary["xpassed"] == ["array_api_tests/test_b.py::test_2"]
    assert summary["skip_reasons"] == {"flaky": 1}


def test_collection_errors_from_json_collectors_and_output():
    summary = run.summarize(FAKE_REPORT_COLLECTORS, {},
                            "ERROR array_api_tests/test_d.py - AttributeError: module\n"
                            "ERROR array_api_tests/test_e.py::test_2 - not a collection error\n")
    assert summary["failures"] == [{
        "id": "array_api_tests/test_d.py", "outcome": "error",
        "message": "AttributeError: module 'arraykit' has no attribute 'f'"}]
    assert summary["totals"]["error"] == 1 and summary["totals"]["passed"] == 1
    assert summary["per_file"]["array_api_tests/test_d.py"]["error"] == 1


def test_markdown_and_json_reports(tmp_path):
    meta = {"api_version": "2025.12", "suite_commit": "abc123", "date": "2026-01-01 00:00",
            "wall_time_s": 12.5, "command": "python conformance/run.py -n 2",
            "interrupted": "timeout after 10 s"}
    summary = run.summarize(FAKE_REPORT, meta, OUTPUT)
    md_path, json_path = tmp_path / "report.md", tmp_path / "report.json"
    run.write_reports(summary, md_path, json_path)
    md = md_path.read_text()
    assert "| API version | 2025.12 |" in md and "| Suite commit (data-apis/array-api-tests) | abc123 |" in md
    assert "| Wall time (s) | 12.5 |" in md and "timeout after 10 s" in md
    assert "| 8 | 1 | 2 | 2 | 1 | 1 | 1 |" in md
    assert "| array_api_tests/test_a.py | 1 | 1 | 0 | 1 | 0 | 0 |" in md
    assert "## Failing tests (4)" in md
    assert "- `array_api_tests/test_a.py::test_2` — AttributeError: module 'arraykit'" in md
    assert "Expected failures that passed (1)" in md
    assert "## Skip reasons" in md and "| flaky | 1 |" in md
    assert json.loads(json_path.read_text())["totals"]["failed"] == 2


def test_report_without_failures_says_none():
    md = run.render_markdown(run.summarize(
        {"tests": [_test("array_api_tests/test_a.py::test_1", "passed")]}, {}))
    assert "## Failing tests (0)\n\nNone." in md and "Expected failures that passed" not in md


def test_long_messages_are_cut():
    line = run._first_line("\n  " + "x" * 1000 + "\nsecond")
    assert len(line) == run.MESSAGE_CHARS and line.endswith("...")
