"""pdlint.vllm.arguments.cmdline: argv() offsets, and parse() per release on the spellings people write (no wheels needed)."""
from __future__ import annotations

import random

import pytest

from pdlint.vllm.arguments.cmdline import SplitError, Token, argv, parse
from pdlint.vllm.releases import KNOWN, R


def _texts(value):
    return [t.text for t in argv(value)]


@pytest.mark.parametrize(("text", "expected"), [
    ("vllm serve M --tensor-parallel-size 6", [("vllm", 0), ("serve", 5), ("M", 11), ("--tensor-parallel-size", 13),
                                              ("6", 36)]),
    ("--kv-transfer-config '{\"kv_connector\": \"X\"}'", [("--kv-transfer-config", 0), ('{"kv_connector": "X"}', 21)]),
    ('--x "a \\"b\\" \\$HOME \\n" y', [("--x", 0), ('a "b" $HOME \\n', 4), ("y", 24)]),
    ("a\\ b c", [("a b", 0), ("c", 5)]),
    ("--port 8100 \\\n  --tensor-parallel-size 6", [("--port", 0), ("8100", 7), ("--tensor-parallel-size", 16),
                                                  ("6", 39)]),
    ("M \\\n-tp 4\n# a comment -pp 2\n--port 1 # trailing\n", [("M", 0), ("-tp", 4), ("4", 8), ("--port", 28),
                                                               ("1", 35)]),
    ("a#b '' \"\" $VAR ~/x *", [("a#b", 0), ("", 4), ("", 7), ("$VAR", 10), ("~/x", 15), ("*", 19)]),
    ("  \t\n ", []),
    ("ab\\\ncd", [("abcd", 0)]),
])
def test_string_offsets(text, expected):
    tokens = argv(text)
    assert [(t.text, t.start) for t in tokens] == expected
    assert all(t.item is None for t in tokens)


@pytest.mark.parametrize(("text", "offset"), [("--x 'abc", 4), ('a "b', 2), ("tail\\", 4), ("x \"a\\\"", 2)])
def test_split_errors_say_where(text, offset):
    with pytest.raises(SplitError) as err:
        argv(text)
    assert err.value.offset == offset and err.value.message


def test_list_items_and_joined_items():
    tokens = argv(["--port", 8100, "--tensor-parallel-size 2", True, 0.9, "--kv-transfer-config={\"a\": 1}",
                   "Qwen/Qwen3 0.6B", "--served-model-name  'a b'  c"])
    assert [(t.text, t.item, t.start) for t in tokens] == [
        ("--port", 0, 0), ("8100", 1, 0), ("--tensor-parallel-size", 2, 0), ("2", 2, 23), ("True", 3, 0),
        ("0.9", 4, 0), ('--kv-transfer-config={"a": 1}', 5, 0), ("Qwen/Qwen3 0.6B", 6, 0),
        ("--served-model-name", 7, 0), ("a b", 7, 21), ("c", 7, 28)]
    with pytest.raises(SplitError) as err:
        argv(["M", "--x 'open"])
    assert (err.value.item, err.value.offset) == (1, 4)
    with pytest.raises(SplitError):
        argv({"a": 1})  # type: ignore[arg-type]


def _parse(text, release="0.32.0", **kwargs):
    return parse(argv(text), R(release), **kwargs)


def test_origins_point_at_the_flag_and_its_value():
    text = "vllm serve M --tensor-parallel 6 --port=8100 --enable-prefix-caching --kv-transfer-config.kv_role kv_both"
    got = _parse(text)
    assert got.launcher == "serve" and not got.problems
    assert got.values == {"model": "M", "tensor_parallel_size": 6, "port": 8100, "enable_prefix_caching": True,
                          "kv_transfer_config": {"kv_role": "kv_both"}}
    assert got.flags[("tensor_parallel_size",)].start == 13 and got.value_tokens[("tensor_parallel_size",)].start == 31
    assert got.flags[("port",)] == got.value_tokens[("port",)] == Token("--port=8100", None, 33)
    assert got.value_tokens[("enable_prefix_caching",)].text == "--enable-prefix-caching"
    assert got.flags[("kv_transfer_config", "kv_role")].text == "--kv-transfer-config.kv_role"
    assert got.value_tokens[("kv_transfer_config", "kv_role")].text == "kv_both"
    assert got.flags[("model",)] == got.value_tokens[("model",)] == Token("M", None, 11)


CASES = [
    # short aliases: glued only to two-character options (argparse _get_option_tuples)
    ("0.32.0", "M -tp=4", {"tensor_parallel_size": 4}, None),
    ("0.32.0", "M -tp4", {}, "unrecognized arguments: -tp4"),
    ("0.32.0", "M -n2 -r=1", {"nnodes": 2, "node_rank": 1}, None),
    ("0.9.2", "M -dpn 1", {"data_parallel_rank": 1}, None),
    ("0.9.1", "M -dpn 1", {}, "unrecognized arguments: -dpn 1"),
    # prefix abbreviations: allow_abbrev stays on
    ("0.32.0", "M --tensor-parallel 6", {"tensor_parallel_size": 6}, None),
    ("0.32.0", "M --data-parallel-s 2", {}, "ambiguous option: --data-parallel-s could match --data-parallel-size, "),
    ("0.32.0", "M --enable-prefix-caching=1", {},
     "argument --enable-prefix-caching/--no-enable-prefix-caching: ignored explicit argument '1'"),
    # booleans per release
    ("0.32.0", "M --no-enable-prefix-caching", {"enable_prefix_caching": False}, None),
    ("0.32.0", "M --enable-hybrid-kv-cache-manager", {}, "unrecognized arguments: --enable-hybrid-kv-cache-manager"),
    ("0.33.0", "M --enable-hybrid-kv-cache-manager", {"disable_hybrid_kv_cache_manager": False}, None),
    # dashes or underscores: up to 0.9.0 everywhere in the flag, from 0.9.1 only before the first "."
    ("0.32.0", "M --tensor_parallel_size=2 --kv_transfer_config.kv_role kv_both",
     {"tensor_parallel_size": 2, "kv_transfer_config": {"kv_role": "kv_both"}}, None),
    ("0.9.0", "M --kv_transfer_config.kv_role kv_both", {"kv_transfer_config": {"kv-role": "kv_both"}}, None),
    ("0.8.5", "M --kv-transfer-config.kv_role kv_both", {},
     "unrecognized arguments: --kv-transfer-config.kv-role kv_both"),
    # dotted sub-keys: lists with +, JSON values, merged; a later whole-JSON flag loses to them (appended last)
    ("0.32.0", ("M --kv-transfer-config.kv_connector_extra_config.ports+ 1,2 --kv-transfer-config.kv_ip=h "
                "--kv-transfer-config '{\"kv_role\": \"kv_both\"}'"),
     {"kv_transfer_config": {"kv_connector_extra_config": {"ports": ["1", "2"]}, "kv_ip": "h"}}, None),
    ("0.32.0", "M --kv-transfer-config '{bad'", {}, "argument --kv-transfer-config: invalid JSON: "),
    ("0.32.0", "M --hf-overrides ' {\"a\": 1}\n' --pt-load-map-location cuda:0",
     {"hf_overrides": {"a": 1}, "pt_load_map_location": "cuda:0"}, None),  # union_dict_and_str
    ("0.9.2", "M --hf-overrides ' {\"a\": 1}'", {"hf_overrides": ' {"a": 1}'}, None),
    # -O per release
    ("0.8.5", "M -O3", {"compilation_config": "3"}, None),
    ("0.10.0", "M -O 3", {"compilation_config": {"level": 3}}, None),
    ("0.11.1", "M -O3", {"compilation_config": {"mode": 3}}, None),
    ("0.12.0", "M -O.backend=eager", {"compilation_config": {"backend": "eager"}}, None),
    ("0.13.0", "M -O=2", {"optimization_level": "2"}, None),
    # positional model vs --model
    ("0.11.0", "--model M", {}, "With `vllm serve`, you should provide the model as a positional argument"),
    ("0.11.0", "--model=M", {"model": "M"}, None),
    ("0.11.1", "--port 1 --model M", {"model": "M", "port": 1}, None),
    ("0.11.1", "X --model M", {}, "unrecognized arguments: X"),
    ("0.17.0", "--served-model-name a", {}, "`model` should be provided as the first positional argument"),
    ("0.32.0", "M --served-model-name a b", {"served_model_name": ["a", "b"]}, None),
    # types, choices, nargs, repeated flags
    ("0.32.0", "M --tensor-parallel-size x", {}, "argument --tensor-parallel-size/-tp: invalid int value: 'x'"),
    ("0.11.0", "M --block-size 7", {}, "argument --block-size: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128"),
    ("0.32.0", "M --max-model-len 32k --quantization None", {"max_model_len": 32000, "quantization": None}, None),
    ("0.32.0", "M --max-model-len 1.5K", {}, "argument --max-model-len: Decimals are not allowed"),
    ("0.32.0", "M --hf-token", {"hf_token": True}, None),
    ("0.32.0", "M --port 1 --port 2 -tp 2 --tensor-parallel-size=3", {"port": 2, "tensor_parallel_size": 3}, None),
    ("0.32.0", "M --port", {}, "argument --port: expected one argument"),
    ("0.32.0", "M --foo 1", {}, "unrecognized arguments: --foo 1"),
    ("0.32.0", "M --help", {}, "-h/--help: vllm prints its help and exits"),
]


@pytest.mark.parametrize(("release", "text", "values", "problem"), CASES)
def test_release_rules(release, text, values, problem):
    got = _parse(text, release)
    if problem is None:
        assert not got.problems
        assert got.values == {"model": "M", **values}
    else:
        assert len(got.problems) == 1 and got.problems[0].message.startswith(problem), got.problems


def test_nargs_plus_takes_the_model_too():
    """argparse: --served-model-name (nargs +) takes every string up to the next option, the model as well."""
    assert _parse("--served-model-name a b M", "0.16.0").values == {"served_model_name": ["a", "b", "M"]}


def test_did_you_mean_and_other_releases():
    assert _parse("M --tensor-paralel-size 2").problems[0].hint.startswith("did you mean --tensor-parallel-size")
    assert _parse("M --nnodes 2", "0.11.0").problems[0].hint == "--nnodes is an argument of vLLM 0.11.1+, not of 0.11.0"
    assert "--runner pooling" in _parse("M --task embed", "0.29.0").problems[0].hint
    assert "0.9.0+" in _parse("M --kv-transfer-config.kv_role x", "0.8.5").problems[0].hint
    assert "--disable-hybrid-kv-cache-manager" in _parse("M --enable-hybrid-kv-cache-manager").problems[0].hint
    assert _parse("M --port x --foo").problems[0].token.text == "x"


def test_launchers():
    assert _parse("python3 -m dynamo.vllm --model M --connector nixl") == parse([], R("0.32.0")).__class__(
        {}, {}, {}, (), "dynamo")
    api = _parse("python -m vllm.entrypoints.openai.api_server --model M --port 1 X")
    assert (api.launcher, api.values, api.problems) == ("api_server", {"model": "M", "port": 1, "model_tag": "X"}, ())
    assert _parse("/opt/venv/bin/vllm serve M").values == {"model": "M"}
    assert _parse("M -tp 2").launcher == ""


def test_config_file_relative_to_base_dir(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "pd.yaml").write_text("tensor_parallel_size: 6\nport: 8100\nenforce-eager: true\n"
                                               "enable-prefix-caching: false\nserved-model-name: [a, b]\n")
    got = _parse("M --config conf/pd.yaml --port 9000", base_dir=str(tmp_path))
    assert not got.problems
    assert got.values == {"model": "M", "tensor_parallel_size": 6, "port": 9000, "enforce_eager": True,
                          "served_model_name": ["a", "b"]}  # CLI > file; `false` dropped under `vllm serve`
    flag, value = got.flags[("tensor_parallel_size",)], got.value_tokens[("tensor_parallel_size",)]
    assert (flag.file, flag.line, flag.col, value.line, value.col) == (str(tmp_path / "conf/pd.yaml"), 1, 1, 1, 23)
    assert got.value_tokens[("port",)].text == "9000"
    api = parse(argv("python3 -m vllm.entrypoints.openai.api_server --config conf/pd.yaml --model M"), R("0.32.0"),
                base_dir=str(tmp_path))
    assert api.values["enable_prefix_caching"] is False  # 0.28.0+: --no-key where the parsing parser owns it


@pytest.mark.parametrize(("text", "problem"), [
    ("M --config missing.yaml", "Unable to read the config file at"),
    ("M --config pd.json", "Config file must be of a yaml/yml type. json supplied"),
    ("M --config", "No config file specified!"),
    ("M --config a.yaml --config a.yaml", "More than one config file specified!"),
    ("--config list.yaml", "config file"),
    ("--port 1 --config ok.yaml", "No model specified!"),
    ("M --config bad.yaml", "Unable to read the config file at"),
])
def test_config_file_problems(tmp_path, text, problem):
    (tmp_path / "list.yaml").write_text("- a\n")
    (tmp_path / "ok.yaml").write_text("port: 1\n")
    (tmp_path / "bad.yaml").write_text("a: [\n")
    (tmp_path / "a.yaml").write_text("port: 1\n")
    got = _parse(text, base_dir=str(tmp_path))
    assert len(got.problems) == 1 and got.problems[0].message.startswith(problem)
    assert got.problems[0].kind == "invalid"


def test_config_equals_is_not_read(tmp_path):
    assert _parse("M --config=missing.yaml", base_dir=str(tmp_path)).values == {"model": "M",
                                                                               "config": "missing.yaml"}


def test_a_number_too_large_is_a_problem():
    got = _parse("M --kv-transfer-config.x " + "9" * 400 + "k", "0.20.0")  # human_readable_int: int(inf)
    assert len(got.problems) == 1 and got.problems[0].message.startswith("vLLM's parser fails")


def test_never_raises():
    rng = random.Random(24)
    pieces = ["-", "--", "-O", "-O.", "--kv-transfer-config.", ".", "=", "--model", "--config", "-tp", "+", "{",
              "--x.y+", "serve", "", " ", "--no-", "--enable-", "-1", "--help=", "-O=", "\x00", "é"]
    for release in KNOWN[::5]:
        for _i in range(200):
            tokens = [Token("".join(rng.choice(pieces) for _j in range(rng.randint(1, 3))), i)
                      for i in range(rng.randint(0, 6))]
            got = parse(tokens, release)
            assert isinstance(got.problems, tuple)
