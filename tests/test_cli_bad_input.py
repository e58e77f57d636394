"""The command line refuses bad input cleanly, for every declared mechanism and option.

The options are enumerated from the registry and the parser, never hand-listed: for every
mechanism, every declared option (and the run options ``--compositions``, ``--accuracy``, the
targets ``--eps``/``--delta``, ``rdp``'s ``--order``) is given each bad value of its kind (NaN,
infinities, negative, zero, out of the declared range, not a number, huge), and the call must
exit with status 2 and one line on stderr that names the option as the user wrote it, with no
traceback and no warning, within a time limit.  Most calls run ``cli.main`` in process (fast);
a few run the real command to see what reaches stderr.  File options (``--pmfs``, ``--matrix``)
get malformed files: strings, booleans, null in place of a number, deep nesting, a file over the
size limit, numbers beyond a double's range.
"""

import contextlib
import io
import json
import math
import re
import signal
import subprocess
import sys
import warnings

import pytest

from shuffle_lib import cli, mechanisms
from shuffle_lib.core import validate as v

TIME_LIMIT = 20   # seconds per in-process call

# one valid file per file option (the only thing the registry cannot generate); a new file option
# without an entry here fails test_every_file_option_has_a_valid_file
VALID_FILE = {"--pmfs": {"p": [0.5, 0.3, 0.2], "q": [0.25, 0.25, 0.5]},
              "--matrix": {"matrix": [[0.75, 0.25], [0.25, 0.75]]}}
FILE_BASE = {"--pmfs": ["custom"], "--matrix": ["randomizer", "--n", "20", "--family", "matrix"]}


def is_file_option(p):
    return p.kind is str and p.choices is None and "JSON file" in p.help


def declarations():
    return [mechanisms.get(n) for n in mechanisms.names()]


@contextlib.contextmanager
def time_limit(seconds):
    def fail(*_):
        raise TimeoutError(f"no answer within {seconds} s")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_main(argv):
    """(exit status, stdout, stderr, warnings) of ``cli.main(argv)`` in process."""
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, time_limit(TIME_LIMIT):
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(argv)
            except SystemExit as e:          # argparse's own errors go through _Parser.error
                status = e.code
    return status, out.getvalue(), err.getvalue(), [str(w.message) for w in caught]


def names_option(line, option):
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", line) is not None


def assert_refused(argv, option):
    status, out, err, caught = run_main(argv)
    lines = err.strip().splitlines()
    assert status == 2, (argv, status, err)
    assert out == "" and len(lines) == 1 and lines[0].startswith("error: "), (argv, err)
    assert names_option(lines[0], option), (argv, option, lines[0])
    assert not re.search(r"\bnp\.\w+\(", lines[0]), (argv, lines[0])      # numbers, not numpy reprs
    assert not caught, (argv, caught)


def example_argv(mech, tmp_path):
    """The mechanism's example as options; custom's pair written to a file."""
    if mech.name == "custom":
        f = tmp_path / "example.json"
        f.write_text(json.dumps(VALID_FILE["--pmfs"]))
        return ["--pmfs", str(f)]
    return [x for k, val in mech.example.items() for x in (mech.param(k).option, str(val))]


def bad_numbers(p):
    """Bad command-line texts for a declared numeric option: each outside its declared range."""
    lo = -math.inf if p.lo is None else p.lo
    hi = math.inf if p.hi is None else p.hi
    out = ["nan", "inf", "-inf", "abc", "", "1e999"]
    if p.kind is int:
        out += ["1.5", str(int(lo) - 1) if math.isfinite(lo) else None, str(int(hi) + 1) if math.isfinite(hi) else None,
                "9" * 40]
    else:
        out += [repr(lo) if p.lo_open else repr(lo - max(1.0, abs(lo))) if math.isfinite(lo) else None,
                repr(hi) if p.hi_open else repr(hi * 2 + 1) if math.isfinite(hi) else None, "1e300", "-1e300"]
    values = [x for x in dict.fromkeys(out) if x is not None]
    valid = []
    for x in values:         # keep only values the declaration itself refuses ('-1e300' may be in range)
        try:
            p.check((p.parse or p.kind)(x))
            valid.append(x)
        except (ValueError, OverflowError):
            pass
    return [x for x in values if x not in valid]


def option_cases():
    """(mechanism, option, bad text) for every declared option of every mechanism."""
    for mech in declarations():
        for p in mech.params:
            if p.choices is not None:
                for bad in ("nosuch", ""):
                    yield mech.name, p.option, bad
            elif p.kind in (int, float) or p.parse is not None:
                for bad in bad_numbers(p) if p.kind in (int, float) else ["nan", "-1", "1.5", "abc", "9" * 40]:
                    yield mech.name, p.option, bad


def with_value(base, option, value):
    """``base`` with ``option`` set to ``value`` (replaced if present, else appended)."""
    out = list(base)
    if option in out:
        out[out.index(option) + 1] = value
        return out
    return out + [option, value]


@pytest.mark.parametrize("verb", ["delta", "epsilon"])
def test_every_declared_option_refuses_bad_values(verb, tmp_path):
    target = ["--eps", "1"] if verb == "delta" else ["--delta", "1e-6"]
    count = 0
    for name, option, bad in option_cases():
        mech = mechanisms.get(name)
        argv = [verb, name, *with_value(example_argv(mech, tmp_path), option, bad), *target]
        assert_refused(argv, option)
        count += 1
    assert count >= 100           # the sweep is not vacuous: every numeric option, ~8 values each


RUN_BAD = {"--compositions": ["0", "-1", "1.5", "nan", "abc", "", "99999999999", "9" * 40],
           "--accuracy": ["0", "-1", "1.5", "nan", "inf", "abc", "1e999"],
           "--eps": ["-1", "nan", "-inf", "abc", "-1e300"],
           "--delta": ["0", "1", "-1", "nan", "inf", "abc", "2"]}


@pytest.mark.parametrize("mech", mechanisms.names())
def test_run_options_refuse_bad_values(mech, tmp_path):
    m = mechanisms.get(mech)
    for verb, target in (("delta", ["--eps", "1"]), ("epsilon", ["--delta", "1e-6"])):
        base = [verb, mech, *example_argv(m, tmp_path), *target]
        for option in ("--compositions", "--accuracy", target[0]):
            for bad in RUN_BAD[option]:
                assert_refused(with_value(base, option, bad), option)


@pytest.mark.parametrize("mech", mechanisms.names())
def test_rdp_order_and_calibrate_refuse_bad_values(mech, tmp_path):
    m = mechanisms.get(mech)
    base = ["rdp", mech, *example_argv(m, tmp_path), "--order", "2"]
    for bad in ["1", "0.5", "-1", "nan", "inf", "abc", "1e999", repr(2 * LAM_MAX())]:
        assert_refused(with_value(base, "--order", bad), "--order")
    for p in m.params:
        if p.more_private is None:
            continue
        spellings = {x.name for x in cli._related(m, p)}        # k-RR's --eps0 is also --gamma
        fixed = [x for k, val in m.example.items() if k not in spellings for x in (m.param(k).option, str(val))]
        base = ["calibrate", mech, *fixed, "--eps", "1", "--delta", "1e-6", "--solve", p.name]
        given = str(m.example.get(p.name, 1))
        assert_refused(base + [p.option, given], p.option)   # the solved one given a value
        for option, bad in (("--eps", "nan"), ("--eps", "-1"), ("--delta", "0"), ("--delta", "abc"),
                            ("--compositions", "0"), ("--accuracy", "2")):
            assert_refused(with_value(base, option, bad), option)


def LAM_MAX():
    from shuffle_lib.core.renyi import LAM_MAX as top
    return top


def test_every_file_option_has_a_valid_file():
    found = {p.option for m in declarations() for p in m.params if is_file_option(p)}
    assert found == set(VALID_FILE), found


def bad_files(option):
    """(label, file text) for a file option: its valid object with each number replaced by a
    string, a boolean, null; nested too deep; beyond a double; NaN; over the size limit."""
    good = VALID_FILE[option]
    key = next(iter(good))
    text = json.dumps(good)
    first = re.search(r"-?\d+\.\d+", text)
    swap = [(kind, text[:first.start()] + rep + text[first.end():])
            for kind, rep in (("string", '"0.5"'), ("boolean", "true"), ("null", "null"))]
    return swap + [
        ("deep", json.dumps({key: None}).replace("null", "[" * 5000 + "]" * 5000)),
        ("deep-ok-json", json.dumps({key: [[[[[[[[[[0.5]]]]]]]]]]})),
        ("huge-number", text[:first.start()] + "1e999" + text[first.end():]),
        ("huge-int", text[:first.start()] + "9" * 5000 + text[first.end():]),
        ("nan", text[:first.start()] + "NaN" + text[first.end():]),
        ("not-json", "{" + text),
        ("not-utf8", "\udcff"),
        ("empty", ""),
        ("top-level-list", json.dumps([good])),
        ("too-large", " " * (LIMIT + 1) + text),
    ]


LIMIT = 10_000   # the size limit while the sweep runs (writing a 100 MB file each run is slow)


@pytest.mark.parametrize("option", sorted(VALID_FILE))
def test_file_options_refuse_malformed_files(option, tmp_path, monkeypatch):
    monkeypatch.setattr(v, "JSON_MAX_BYTES", LIMIT)
    for label, content in bad_files(option):
        f = tmp_path / f"{label}.json"
        f.write_bytes(content.encode("utf-8", "surrogateescape"))
        argv = ["delta", *FILE_BASE[option], option, str(f), "--eps", "1"]
        assert_refused(argv, option)
    assert_refused(["delta", *FILE_BASE[option], option, str(tmp_path / "missing.json"), "--eps", "1"], option)
    assert_refused(["delta", *FILE_BASE[option], option, str(tmp_path), "--eps", "1"], option)   # a folder


def test_help_states_the_file_size_and_order_limits():
    for option, base in FILE_BASE.items():
        with pytest.raises(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:
            cli.main(["delta", base[0], "--help"])
        assert f"{v.JSON_MAX_BYTES / 1e6:g} MB" in out.getvalue()
    with pytest.raises(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:
        cli.main(["rdp", "rr", "--help"])
    assert f"{LAM_MAX():g}" in out.getvalue()


def test_strings_and_booleans_in_pmfs_are_refused(tmp_path):
    """Regression: {"p": ["0.5", 0.5], ...} was accepted."""
    f = tmp_path / "s.json"
    f.write_text('{"p": ["0.5", 0.5], "q": [0.5, 0.5]}')
    status, _, err, _ = run_main(["delta", "custom", "--pmfs", str(f), "--eps", "1"])
    assert status == 2 and "string at p[0]" in err and "--pmfs" in err


def test_subsampled_errors_name_subset():
    """Regression: '--subset' was reported as 'm'."""
    status, _, err, _ = run_main(["delta", "ldp-shuffle-subsampled", "--n", "20", "--eps0", "1", "--subset", "50",
                                  "--eps", "1"])
    assert status == 2 and "--subset" in err and not re.search(r"(?<![\w-])m(?![\w-])", err), err


def test_rdp_errors_name_order_and_its_cap():
    """Regression: '--order' was reported as 'lam', with a 1e4 cap --help did not state."""
    status, _, err, _ = run_main(["rdp", "ldp-shuffle", "--n", "100", "--eps0", "1", "--order", "1e5"])
    assert status == 2 and "--order" in err and "lam" not in err and f"{LAM_MAX():g}" in err, err


@pytest.mark.parametrize("argv", [
    ["delta", "ldp-shuffle-subsampled", "--n", "200", "--eps0", "1", "--subset", "50", "--eps", "1", "--accuracy", "1"],
    ["epsilon", "ldp-shuffle-subsampled", "--n", "200", "--eps0", "1", "--subset", "50", "--delta", "1e-20",
     "--compositions", "2"],
])
def test_subsampled_math_domain_error_is_gone(argv):
    """Regression: both failed with 'math domain error' (a log of a zero-mass top atom)."""
    status, out, err, caught = run_main(argv + ["--json"])
    assert status == 0 and err == "" and not caught, err
    for r in json.loads(out)["results"]:
        lo, up = (r["delta_lower"], r["delta_upper"]) if "eps" in r else (r["eps_lower"], r["eps_upper"])
        assert lo is not None and up is not None and lo <= up


def example_commands():
    for mech in declarations():
        if mech.example:
            opts = [x for k, val in mech.example.items() for x in (mech.param(k).option, str(val))]
            yield [mech.name, *opts]


@pytest.mark.parametrize("cmd", list(example_commands()), ids=lambda c: c[0])
def test_examples_run_without_warnings(cmd):
    """Regression: RuntimeWarnings reached stderr on successful runs.  Every verb on every
    mechanism's example, in process (warnings recorded) under the suite's filterwarnings=error."""
    for verb, tail in (("delta", ["--eps", "0", "1", "3"]), ("epsilon", ["--delta", "1e-3", "1e-9"]),
                       ("delta", ["--eps", "1", "--compositions", "3"]), ("rdp", ["--order", "2", "30"])):
        status, out, err, caught = run_main([verb, *cmd, *tail, "--json"])
        assert status == 0 and err == "" and not caught, (verb, cmd, err, caught)
        json.loads(out)


def cli_process(*args):
    return subprocess.run([sys.executable, "-W", "error", "-m", "shuffle_lib", *args], capture_output=True,
                          text=True, timeout=120)


def test_real_processes_show_one_line_and_no_warning(tmp_path):
    """A few subprocess calls: what reaches the real stderr (tracebacks, warnings)."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"p": ' + "[" * 5000 + "]" * 5000 + ', "q": [1]}')
    for args, option in ((["delta", "custom", "--pmfs", str(deep), "--eps", "1"], "--pmfs"),
                         (["delta", "histogram-krr", "--n", "40", "--n-x0", "nan", "--k", "4", "--eps0", "2",
                           "--eps", "1"], "--n-x0"),
                         (["rdp", "rr", "--eps0", "1", "--order", "1e9"], "--order")):
        r = cli_process(*args)
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr and "Warning" not in r.stderr and option in r.stderr, r.stderr
    r = cli_process("delta", "ldp-shuffle", "--n", "100", "--eps0", "1", "--eps", "0.5", "--compositions", "2")
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.parametrize("argv, options", [
    (["delta", "krr-strong", "--n", "50", "--gamma", "0.5", "--eps0", "1", "--k", "3", "--eps", "1"],
     ["--gamma", "--eps0"]),
    (["delta", "krr-weak", "--n", "50", "--k", "3", "--eps", "1"], ["--gamma", "--eps0"]),
    (["calibrate", "krr-strong", "--n", "50", "--gamma", "0.5", "--k", "3", "--eps", "1", "--delta", "1e-3",
      "--solve", "eps0"], ["--gamma", "--eps0"]),
    (["calibrate", "krr-strong", "--k", "3", "--eps", "1", "--delta", "1e-3", "--solve", "n"],
     ["--gamma", "--eps0"]),
])
def test_gamma_and_eps0_are_one_setting(argv, options):
    """k-RR takes --gamma or --eps0: both, or neither, is one line naming both."""
    for option in options:
        assert_refused(argv, option)
