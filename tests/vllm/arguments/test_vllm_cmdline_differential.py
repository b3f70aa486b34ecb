"""pdlint's reading of `vllm_args` == each release's own FlexibleArgumentParser, on generated command lines.

Per release in KNOWN: a few hundred seeded command lines in every spelling (dashes/underscores, `=`, short aliases
glued or not, prefix abbreviations, --no-/--enable-/--disable- switches, dotted sub-keys, JSON, nargs lists,
repeated flags, positional vs --model, -O, unknown flags, --config files) go through pdlint.vllm.arguments.cmdline.parse
and through the release's lifted parser (tests/vllm_flexparser.py). The values must be equal, and pdlint must
report a problem exactly when vLLM's parser refuses (SystemExit, ValueError, any exception), in the same words
for argparse's own errors.
"""
from __future__ import annotations

import functools
import random
import shlex

import pytest
import test_vllm_cmdline
import vllm_flexparser
import vllm_source
import yaml

from pdlint.vllm.arguments import cmdline
from pdlint.vllm.arguments.args import Argument, arguments
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = vllm_source.roots(KNOWN)
LINES = 300
API_LINES = 80
MODELS = ("Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B", "org/m.v1.5", "./models/x", "M")
WORDS = ("auto", "eager", "x", "NixlConnector", "kv_both", "80g", "1.5", "None", "", "a b")
PD = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "port", "kv_transfer_config",
      "served_model_name", "max_model_len", "gpu_memory_utilization", "enable_prefix_caching", "block_size",
      "quantization", "disable_hybrid_kv_cache_manager", "data_parallel_size_local", "headless", "api_server_count",
      "enable_expert_parallel", "hf_token", "dtype", "kv_cache_dtype", "compilation_config", "nnodes", "node_rank",
      "data_parallel_rank", "max_num_batched_tokens", "enable_chunked_prefill", "middleware", "ignore_patterns")
JSONS = ('{"kv_connector": "NixlConnector", "kv_role": "kv_both"}', '{"a": {"b": 1}}', '{bad', "None",
         '{"level": 3}', ' {"a": 1}\n', "cuda:0")


def _value(rng: random.Random, arg: Argument) -> str:
    kind = arg.item if arg.kind == "list" else arg.kind
    pools = {"int": ("1", "2", "4", "6", "8", "0", "-1", "8100", "x", "2.5", " 4", "None"),
             "float": ("0.9", "1e-1", "1", "most", "-0.5", "None"),
             "int_hr": ("32k", "1K", "32768", "auto", "-1", "1.5K", "1t", "2M", "None", "many"),
             "json": JSONS}
    if arg.kind == "choice":
        return str(rng.choice([*arg.choices, *arg.choices, "nope", "None"]))
    return rng.choice(pools.get(kind or "", WORDS))


def _spell(rng: random.Random, flag: str) -> str:
    """The flag as people write it: exact, with underscores, or a prefix (unique or not)."""
    roll = rng.random()
    if roll < 0.15:
        return "--" + flag[2:].replace("-", "_")
    if roll < 0.27 and len(flag) > 6:
        return flag[:rng.randint(len(flag) // 2, len(flag) - 1)]
    return flag


def _switch(rng: random.Random, arg: Argument, flag: str) -> list[str]:
    spellings = [flag, flag]
    if arg.action != "store_true":
        spellings.append("--no-" + flag[2:])
    for one, other in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
        if flag.startswith(one):
            spellings.append(other + flag[len(one):])
    spellings += [*arg.aliases, flag + "=1"] if rng.random() < 0.1 else arg.aliases
    return [rng.choice(spellings)]


def _option(rng: random.Random, arg: Argument) -> list[str]:
    flag = _spell(rng, arg.flags[0])
    if arg.kind == "bool":
        return _switch(rng, arg, flag)
    if arg.nargs == "?" and rng.random() < 0.5:
        return [flag]
    if arg.action == "append":
        return [flag, _value(rng, arg), arg.flags[0], _value(rng, arg)]
    if arg.kind == "list":
        return [flag, *(_value(rng, arg) for _i in range(rng.randint(0, 3)))]
    if arg.kind == "json" and rng.random() < 0.4:
        key = rng.choice((".kv_connector", ".kv_role=kv_both", ".extra.nested", ".kv_ip", ".list+", ".list+=a,b"))
        return [flag + key] if "=" in key else [flag + key, rng.choice(("X", "3", "a,b", "80g", "true", '"q"'))]
    value = _value(rng, arg)
    roll = rng.random()
    if arg.aliases and roll < 0.3:
        alias = arg.aliases[0]
        return rng.choice(([alias, value], [f"{alias}={value}"], [alias + value]))
    return [f"{flag}={value}"] if roll < 0.55 else [flag, value]


def _config(rng: random.Random, table: dict[str, Argument], tmp_path, number: int) -> list[str]:
    """A --config FILE (in tmp_path, the parser's working directory) in one of the ways people write it."""
    name = f"cfg{number}.yaml"
    data = {}
    for arg in rng.sample(list(table.values()), 3):
        key = arg.flags[0][2:]
        key = key.replace("-", "_") if rng.random() < 0.3 else key
        if arg.kind == "bool":
            data[key] = rng.choice((True, False))
        elif arg.kind == "list":
            data[key] = [_value(rng, arg) for _i in range(rng.randint(0, 2))]
        elif arg.kind == "json":
            data[key] = rng.choice(({"kv_connector": "NixlConnector"}, '{"a": 1}'))
        else:
            data[key] = yaml.safe_load(_value(rng, arg) or "''") if rng.random() < 0.5 else _value(rng, arg)
    if rng.random() < 0.3:
        data["model"] = rng.choice(MODELS)
    (tmp_path / name).write_text(yaml.safe_dump(data), encoding="utf-8")
    roll = rng.random()
    if roll < 0.1:
        return [f"--config={name}"]
    if roll < 0.15:
        return ["--config", "missing.yaml"]
    if roll < 0.2:
        return ["--config", "cfg.json"]
    return ["--config", name] if roll > 0.23 else ["--config", name, "--config", name]


def command_line(rng: random.Random, release: Release, tmp_path, number: int) -> list[str]:
    table = arguments(release)
    pool = [n for n in PD if n in table]
    others = sorted(set(table) - set(pool) - {"model", "config"})
    parts: list[list[str]] = []
    for _i in range(rng.randint(1, 6)):
        name = rng.choice(pool) if rng.random() < 0.7 else rng.choice(others)
        parts.append(_option(rng, table[name]))
    if rng.random() < 0.15:
        parts.append(_option(rng, table[rng.choice(pool)]))  # a repeated flag: the last one wins
    if rng.random() < 0.1:
        parts.append(rng.choice((["--foo", "1"], ["--tensor-paralel-size", "2"], ["--kv-transfer-config.", "x"],
                                 ["--task", "generate"], ["--", "x"])))
    if rng.random() < 0.1:
        parts.append(rng.choice((["-O3"], ["-O", "3"], ["-O=2"], ["-O.level", "1"], ["-O.backend=eager"])))
    if rng.random() < 0.15:
        parts.append(_config(rng, table, tmp_path, number))
    rng.shuffle(parts)
    model = rng.choice(MODELS)
    roll = rng.random()
    if roll < 0.65:
        parts.insert(0, [model])
    elif roll < 0.75:
        parts.append([model])
    elif roll < 0.85:
        parts.insert(rng.randint(0, len(parts)), ["--model", model])
    elif roll < 0.92:
        parts.insert(rng.randint(0, len(parts)), [f"--model={model}"])
    return [word for part in parts for word in part]


def _expected(parser, argv: list[str], read=vllm_flexparser.values) -> tuple[dict | None, str | None]:
    try:
        return read(parser, argv), None
    except vllm_flexparser.Refused as err:
        return None, str(err)
    except Exception as err:  # noqa: BLE001 - vLLM refuses with ValueError, AssertionError, IndexError, OSError...
        return None, f"{type(err).__name__}: {err}"


def _words(problems: tuple[cmdline.Problem, ...]) -> str:
    """pdlint's problems as argparse prints its one error: it stops at the first error pdlint reads past (in the
    order pdlint lists them), and reports unrecognized arguments (all in one message) only when there is none."""
    first = next((p.message for p in problems if not p.message.startswith("unrecognized arguments: ")), None)
    if first is not None:
        return first
    return "unrecognized arguments: " + " ".join(p.message.removeprefix("unrecognized arguments: ") for p in problems)


@functools.cache
def _lifted(release: Release) -> dict:
    return vllm_flexparser.lift(ROOTS[release])


def _compare(release: Release, tmp_path, api_server: bool, engine: bool = False) -> tuple[list, int, int]:
    env = _lifted(release)
    if engine:
        parser, read = vllm_flexparser.build_engine(env, release), vllm_flexparser.engine_values
    elif api_server:
        parser, read = vllm_flexparser.build_api_server(env, release), vllm_flexparser.api_server_values
    else:
        parser, read = vllm_flexparser.build(env, release), vllm_flexparser.values
    rng = random.Random(f"cmdline-{release}-{api_server}-{engine}")
    launcher = ["python3", "-m", "vllm.entrypoints.openai.api_server"] if api_server else []
    wrong, refused, worded = [], 0, 0
    for number in range(API_LINES if api_server or engine else LINES):
        argv = command_line(rng, release, tmp_path, number)
        if engine and rng.random() < 0.5:  # the words Dynamo hands on: --model, and flags of every kind
            argv = [w for w in argv if w not in MODELS]
        tokens = [cmdline.Token(word, index) for index, word in enumerate([*launcher, *argv])]
        got = cmdline.parse(tokens, release, base_dir=str(tmp_path), engine_only=engine)
        values, error = _expected(parser, argv, read)
        if error is None:
            if got.problems or got.values != values:
                wrong.append((argv, values, got.values, got.problems))
            continue
        refused += 1
        if not got.problems:
            wrong.append((argv, error, got.values, ()))
        elif error.startswith(("argument ", "unrecognized arguments", "ambiguous option")) \
                and "cannot be converted to <function" not in error and "JSON" not in _words(got.problems):
            worded += 1
            if _words(got.problems) != error.split("\n\nHint: ")[0]:  # 0.29.0+ appends a --task hint
                wrong.append((argv, error, _words(got.problems), "words"))
    return wrong, refused, worded


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_parser_is_the_release_s(release, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wrong, refused, worded = _compare(release, tmp_path, api_server=False)
    assert not wrong, f"{release}: {len(wrong)} of {LINES} differ, e.g.\n" + "\n".join(map(repr, wrong[:6]))
    assert 0.1 * LINES < refused < 0.9 * LINES, (release, refused)  # both kinds of line are exercised
    assert worded > 0.05 * LINES


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_api_server_parser_is_the_release_s(release, tmp_path, monkeypatch):
    """`python -m vllm.entrypoints.openai.api_server ...`: no `serve`, so --model is plain, the positional (0.10.0+)
    stays model_tag, a config file's `false` is --no-key (0.28.0+) and its arguments go first (0.10.2+)."""
    monkeypatch.chdir(tmp_path)
    wrong, refused, _worded = _compare(release, tmp_path, api_server=True)
    assert not wrong, f"{release}: {len(wrong)} of {API_LINES} differ, e.g.\n" + "\n".join(map(repr, wrong[:6]))
    assert refused < API_LINES


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_dynamo_s_engine_only_parser_is_the_release_s(release, tmp_path, monkeypatch):
    """`python -m dynamo.vllm` hands its leftover words to a FlexibleArgumentParser holding
    AsyncEngineArgs.add_cli_args alone: API-server flags (--port, --host, --api-key) are unrecognized there, and
    named as such (kind invalid, not a flag pdlint lacks)."""
    monkeypatch.chdir(tmp_path)
    wrong, refused, _worded = _compare(release, tmp_path, api_server=False, engine=True)
    assert not wrong, f"{release}: {len(wrong)} of {API_LINES} differ, e.g.\n" + "\n".join(map(repr, wrong[:6]))
    assert 0 < refused < API_LINES
    # (--config FILE is FlexibleArgumentParser.parse_args's own, whatever the parser holds)
    server = [a for a in arguments(release).values() if not a.engine and a.kind != "bool" and a.name != "config"]
    assert server, release
    lifted = vllm_flexparser.build_engine(_lifted(release), release)
    for arg in server:
        got = cmdline.parse([cmdline.Token(arg.flags[0]), cmdline.Token("1")], release, engine_only=True)
        assert [(p.message, p.kind, p.hint) for p in got.problems] == [
            (f"unrecognized arguments: {arg.flags[0]} 1", "invalid", cmdline.SERVER_HINT)], arg.name
        _values, error = _expected(lifted, [arg.flags[0], "1"],
                                   vllm_flexparser.engine_values)
        assert error == f"unrecognized arguments: {arg.flags[0]} 1"


@pytest.mark.parametrize("release", KNOWN[::7], ids=str)
def test_string_form_splits_as_a_shell_does(release, tmp_path):
    """The same lines written as one string (shlex.join) give the same argv and the same reading."""
    rng = random.Random(f"shell-{release}")
    for number in range(50):
        argv = command_line(rng, release, tmp_path, number)
        text = shlex.join(argv)
        tokens = cmdline.argv(text)
        assert [t.text for t in tokens] == argv
        assert all(text[t.start:].startswith((shlex.quote(t.text)[:1], t.text[:1])) for t in tokens if t.text)
        listed = cmdline.parse([cmdline.Token(w, i) for i, w in enumerate(argv)], release, base_dir=str(tmp_path))
        assert cmdline.parse(tokens, release, base_dir=str(tmp_path)).values == listed.values


@pytest.mark.parametrize(("release", "text", "values", "problem"), test_vllm_cmdline.CASES)
def test_hand_picked_cases_are_the_release_s(release, text, values, problem):
    """tests/vllm/arguments/test_vllm_cmdline.py's table of spellings holds against the release's own parser too."""
    release = R(release)
    argv = shlex.split(text)
    expected, error = _expected(vllm_flexparser.build(_lifted(release), release), argv)
    if problem is None:
        assert error is None and expected == {"model": "M", **values}
    else:
        assert expected is None and (problem.split(":")[0] in error or error == "exit 0")  # --help: exit 0


def _good(arg: Argument) -> str | None:
    """A value the argument's type= and choices take (None: a kind this test leaves out)."""
    if arg.kind == "choice":
        return str(arg.choices[0])
    return {"int": "1", "int_hr": "2", "float": "0.5", "json": "{}"}.get(arg.kind)


def _with_good_values(got: cmdline.Parsed, argv: list[str], table: dict[str, Argument]) -> list[str] | None:
    """argv with each value pdlint refused (a type or choice error of one scalar) replaced by one the argument
    takes, the words keeping their places; None when a problem is of another kind (other tests judge those)."""
    fixed = list(argv)
    for problem in got.problems:
        token = problem.token
        name = problem.message.split(":", 1)[0].removeprefix("argument ").split("/")[0]
        arg = next((a for a in table.values() if name in (*a.flags, *a.aliases)), None)
        good = _good(arg) if arg is not None and arg.kind != "list" and arg.action != "append" else None
        if token is None or token.file is not None or token.item is None or problem.kind != "invalid" \
                or not problem.message.startswith("argument ") or "expected" in problem.message or good is None:
            return None
        index = token.item
        if token.text.startswith("-"):  # --flag=value, -tp=4: one word
            if "=" not in token.text:
                return None
            fixed[index] = token.text.split("=", 1)[0] + "=" + good
        else:
            fixed[index] = good
    return fixed


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_a_refused_value_leaves_the_rest_of_the_line_read(release, tmp_path, monkeypatch):
    """a line with bad values reads, for every other argument, what the release's own parser reads
    of the same line with good values in their place; the refused ones are unset and named in Parsed.refused."""
    monkeypatch.chdir(tmp_path)
    parser = vllm_flexparser.build(_lifted(release), release)
    rng = random.Random(f"refused-{release}")
    table = arguments(release)
    checked, wrong = 0, []
    for number in range(LINES):
        argv = command_line(rng, release, tmp_path, number)
        got = cmdline.parse([cmdline.Token(w, i) for i, w in enumerate(argv)], release, base_dir=str(tmp_path))
        fixed = _with_good_values(got, argv, table) if got.problems else None
        if fixed is None:
            continue
        values, error = _expected(parser, fixed)
        if error is not None:
            continue  # the rest has a problem of its own vLLM meets first
        checked += bool(got.refused)  # (a flag given again after its bad value is read: argparse's last wins)
        if got.values != {k: v for k, v in values.items() if k not in got.refused} or got.refused & set(got.values):
            wrong.append((argv, values, got.values, got.refused))
    assert not wrong, f"{release}: {len(wrong)} differ, e.g.\n" + "\n".join(map(repr, wrong[:6]))
    assert checked >= 10, (release, checked)
