"""Where a cold run's time goes, stage by stage: `python bench/stages.py DIR [--runs N]`.

Each run is a fresh process (nothing memoised carries over) running `pdlint --no-cache DIR -f json` in-process,
with the stages' functions wrapped in a timer: inclusive seconds, the minimum over the runs. A stage called inside
another (the preflight inside loading) is indented under it. Rules are timed one by one and the five costliest
listed. This is the profile bench/RESULTS.md quotes where a target is not met; for ratios use bench/run.py.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

# (label, module, attribute): the stages of engine.lint and of loading, outermost first
STAGES = (
    ("import pdlint", "", ""),
    ("load (select.load)", "pdlint.load.select", "load"),
    ("  preflight scan", "pdlint.load.preflight", "check"),
    ("launch stage", "pdlint.launch.stage", "prepare"),
    ("build topology", "pdlint.engine.core", "build"),
    ("schema", "pdlint.engine.core", "_schema"),
    ("merge + finish", "pdlint.engine.core", "finish"),
)


def _wrap(spent: dict[str, float], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start
    return timed


def one_run(directory: str) -> dict[str, float]:
    """The seconds of each stage of one cold run in this process."""
    import importlib

    spent: dict[str, float] = defaultdict(float)
    start = time.perf_counter()
    from pdlint.cli import main
    from pdlint.engine import core

    spent["import pdlint"] = time.perf_counter() - start
    for label, module, attr in STAGES[1:]:
        mod = importlib.import_module(module)
        if hasattr(mod, attr):
            setattr(mod, attr, _wrap(spent, label, getattr(mod, attr)))

    class Timed:
        def __init__(self, rule: Any) -> None:
            # a rule's check is a generator: time it consumed
            self.rule = rule
            self.check = _wrap(spent, f"rule {getattr(rule, 'id', rule)}", lambda topo: list(rule.check(topo)))

        def __getattr__(self, name: str) -> Any:
            return getattr(self.rule, name)

    core.CHECKS = [Timed(r) for r in core.CHECKS]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        main(["--no-cache", directory, "-f", "json"])
    spent["whole run (after import)"] = time.perf_counter() - start
    return dict(spent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_run(args.directory)))
        return
    runs = [json.loads(subprocess.run([sys.executable, __file__, args.directory, "--one"], check=True,
                                      capture_output=True, text=True).stdout) for _unused in range(args.runs)]
    best = {k: min(r.get(k, 0.0) for r in runs) for k in runs[0]}
    rules = sorted(((k, v) for k, v in best.items() if k.startswith("rule ")), key=lambda kv: -kv[1])
    print(f"| stage ({args.directory}, min of {args.runs} cold runs) | seconds |\n|---|---:|")
    for label, _module, _attr in STAGES:
        if label in best:
            print(f"| {label.replace('  ', '&nbsp;&nbsp;')} | {best[label]:.3f} |")
    print(f"| rules, all {len(rules)} | {sum(v for _k, v in rules):.3f} |")
    for key, value in rules[:5]:
        print(f"| &nbsp;&nbsp;{key} | {value:.3f} |")
    print(f"| whole run (after import) | {best['whole run (after import)']:.3f} |")


if __name__ == "__main__":
    main()
