"""Dynamo's vLLM launcher, `python -m dynamo.vllm`: which words of its command line are Dynamo's, the side they
name, and what Dynamo changes in the engine's config before vLLM builds the engine.

Read in ai-dynamo/dynamo's public source (components/src/dynamo/vllm/):
- args.py parse_args: Dynamo's own argparse parser (allow_abbrev=False) takes its flags with parse_known_args;
  what is left goes to vLLM's FlexibleArgumentParser with AsyncEngineArgs.add_cli_args (engine flags only: no
  `serve` subcommand, so the model is `--model`, and the server's flags such as --port are not there). A flag both
  know (`--enforce-eager`) is Dynamo's: vLLM never sees it.
- backend_args.py DynamoVllmArgGroup and common/configuration/groups/runtime_args.py DynamoRuntimeArgGroup: the
  flags below (add_negatable_bool_argument gives --x and --no-x).
- `--disaggregation-mode prefill|decode` (the deprecated `--is-prefill-worker` / `--is-decode-worker`): the side;
  update_dynamo_config_with_engine: prefill without --kv-transfer-config is a ValueError.
- kv_connector_protocols.py disable_hybrid_kv_cache_manager_for_incompatible_pd_connector, called by main.py
  setup_vllm_engine right after create_engine_config: a PdConnector whose children do not all support HMA
  (MultiConnector.all_children_support_hma) gets disable_hybrid_kv_cache_manager = True, where plain vLLM's
  MultiConnector.__init__ asserts.
Dynamo's flags change between its releases; a flag neither this table nor the vLLM release knows is not modelled
(a warning, never an error), and Dynamo releases that built kv_transfer_config from `--connector` are not modelled.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

SOURCE = "ai-dynamo/dynamo components/src/dynamo/vllm/arguments/args.py parse_args, backend_args.py, runtime_args.py"
MODULE = "dynamo.vllm"
# components/src/dynamo/vllm/unified_main.py main(): `config = parse_args(...)`, the same dynamo.vllm.args parse_args
# (disagg.sh --unified runs it), so its command line is dynamo.vllm's
MODULES = (MODULE, "dynamo.vllm.unified_main")

SWITCHES = frozenset((
    "--is-prefill-worker", "--is-decode-worker", "--use-vllm-tokenizer", "--route-to-encoder",
    "--multimodal-encode-worker", "--multimodal-worker", "--multimodal-decode-worker", "--enable-multimodal",
    "--frontend-decoding", "--omni", "--enable-layerwise-offload", "--vae-use-slicing", "--vae-use-tiling",
    "--enable-cache-dit-summary", "--enable-cpu-offload", "--enforce-eager", "--fpm-trace",
    "--exclude-tools-when-tool-choice-none", "--multimodal-embedding-cache-publisher", "--tcp-tls-insecure",
    "--nats-tls-insecure", "--dyn-enable-structural-tag",
    # newer backend_args.py DynamoVllmArgGroup: --headless is vLLM serve's flag too, Dynamo's own here (its parser
    # reads the words first), so the engine-only parser never sees it
    "--headless", "--enable-rl", "--embedding-worker", "--embedding-frontend-tokenization", "--realtime",
    "--classify-worker", "--gms-shadow-mode", "--benchmark-collect-imbalanced",
))
VALUES = frozenset((
    "--disaggregation-mode", "--sleep-mode-level", "--mm-prompt-template", "--stage-configs-path",
    "--video-output-dir", "--default-video-fps", "--layerwise-num-gpu-layers", "--boundary-ratio", "--flow-shift",
    "--diffusion-cache-backend", "--diffusion-cache-config", "--ulysses-degree", "--ring-degree",
    "--cfg-parallel-size", "--model-express-url", "--engine-config-json", "--namespace", "--endpoint",
    "--kv-state-endpoint", "--discovery-backend", "--request-plane", "--response-plane", "--event-plane",
    "--dyn-tool-call-parser", "--dyn-reasoning-parser", "--dyn-default-thinking-mode", "--dyn-structural-tag-scope",
    "--dyn-structural-tag-schema", "--custom-jinja-template", "--endpoint-types", "--dyn-endpoint-types",
    "--dump-config-to", "--multimodal-embedding-cache-capacity-gb", "--media-output-fs-url",
    "--media-output-http-url", "--health-check-payload", "--engine-request-limit", "--tcp-tls-cert-path",
    "--tcp-tls-key-path", "--tcp-tls-ca-cert-path", "--tcp-tls-server-name", "--tcp-tls-handshake-timeout",
    "--tcp-tls-client-cert-path", "--tcp-tls-client-key-path", "--tcp-tls-client-ca-cert-path",
    "--nats-tls-ca-cert-path", "--nats-tls-client-cert-path", "--nats-tls-client-key-path",
    "--custom-encoder-class", "--embedding-transfer-mode", "--embedding-worker-processes", "--benchmark-mode",
    "--benchmark-points-file", "--prefill-max-new-token-samples", "--prefill-max-kv-read-token-samples",
    "--decode-max-kv-read-token-samples", "--decode-max-batch-size-samples", "--prefix-max-batch-size-samples",
    "--benchmark-prefill-granularity", "--benchmark-prefill-kv-read-granularity",
    "--benchmark-prefill-batch-granularity", "--benchmark-decode-length-granularity",
    "--benchmark-decode-batch-granularity", "--benchmark-warmup-iterations", "--benchmark-output-path",
    "--benchmark-timeout",
))
LISTS = frozenset(("--connector", "--output-modalities"))  # nargs="*"
OPTIONAL = frozenset(("--dyn-structural-tag",))  # nargs="?"
SIDES = {"prefill": "prefill", "decode": "decode"}  # --disaggregation-mode values that are a P/D side


@dataclasses.dataclass(frozen=True)
class Word:
    """One of Dynamo's own flags as written, with the values it took (indexes into the words given)."""

    flag: str
    at: int
    values: tuple[str, ...] = ()


def _own(word: str) -> str | None:
    """The Dynamo flag a word is (exact spelling: allow_abbrev=False), else None."""
    name = word.split("=", 1)[0]
    if name.startswith("--no-") and "--" + name[5:] in SWITCHES:
        return name
    return name if name in SWITCHES | VALUES | LISTS | OPTIONAL else None


def split(words: Sequence[str]) -> tuple[list[Word], list[int]]:
    """(Dynamo's flags, the indexes of the words left for vLLM's parser), as parse_known_args splits them."""
    own: list[Word] = []
    rest: list[int] = []
    index = 0
    while index < len(words):
        word = words[index]
        flag = _own(word) if word.startswith("--") else None
        if flag is None:
            rest.append(index)
            index += 1
            continue
        if "=" in word:
            own.append(Word(flag, index, (word.split("=", 1)[1],)))
            index += 1
            continue
        taken: list[str] = []
        index += 1
        if flag in VALUES:
            if index < len(words):
                taken.append(words[index])
                index += 1
        elif flag in LISTS or flag in OPTIONAL:
            while index < len(words) and not words[index].startswith("-"):
                taken.append(words[index])
                index += 1
                if flag in OPTIONAL:
                    break
        own.append(Word(flag, index - len(taken) - 1, tuple(taken)))
    return own, rest


def side(own: Sequence[Word]) -> tuple[str, Word] | None:
    """The P/D side Dynamo's flags name (the last one given wins, as argparse keeps it), and the word."""
    found: tuple[str, Word] | None = None
    for word in own:
        if word.flag == "--disaggregation-mode" and word.values and word.values[0] in SIDES:
            found = (SIDES[word.values[0]], word)
        elif word.flag == "--is-prefill-worker":
            found = ("prefill", word)
        elif word.flag == "--is-decode-worker":
            found = ("decode", word)
    return found
