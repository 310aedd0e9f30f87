"""Evaluate a scenario's assertions: the built-in checks, the recorded-call checks (`latency-ms`,
`cost`) and custom Python evaluators.

A custom evaluator is named in the dataset as `{"type": "python", "function": "module:function",
...options}`, imported from the repository root like the python target, and called as
`function(scenario, output, options)`: the `Scenario`, the `Output` (`text`, `tool_calls`, and
`json`, the parsed text or None) and the assertion's other fields. It returns a `cachelint.Metric`
or a dict of the same fields. An exception or a malformed return fails the scenario with a reason
naming the evaluator; a failed metric fails it unless the metric says `gating: false`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachelint.config import Config
from cachelint.errors import ConfigError
from cachelint.paths import is_inside
from cachelint.runner.assertions import AssertionResult, evaluate
from cachelint.runner.client import CallRecord
from cachelint.runner.cost import Price, call_spend, format_dollars, unpriced_reason
from cachelint.runner.dataset import Scenario
from cachelint.runner.output import Output
from cachelint.runner.pytarget import from_repository

if TYPE_CHECKING:
    from cachelint.runner.metrics import Interpretation, Metric

Evaluator = Callable[[Scenario, Output, Mapping[str, Any]], Any]


@dataclass(frozen=True)
class EvalContext:
    """What evaluation needs beyond the output: the imported evaluators and the config tables."""

    functions: Mapping[str, Evaluator] = field(default_factory=dict)  # "module:function" ->
    interpretations: Mapping[str, Interpretation] = field(default_factory=dict)
    prices: Mapping[str, Price] = field(default_factory=dict)
    model: str = ""  # the configured target model, when a response names none


def _outside(path: str | None, repo: Path) -> str | None:
    """Why the file `path` is no module of the repository `repo`, or None when it is one."""
    if path in ("built-in", "frozen"):
        return "it is built into Python"
    if not path or not os.path.isfile(path):
        return "it has no file of its own"
    return _foreign(path, repo)


def _package_outside(name: str, repo: Path) -> str | None:
    """Why the package `name`, a parent of an evaluator's module, is not the repository's, or
    None. Finding `a.b` imports `a` first, so `a` is checked before: a dataset naming
    `this.x:f` (or any installed package's submodule) ran that package's import-time code."""
    loaded = sys.modules.get(name)
    spec = getattr(loaded, "__spec__", None) if loaded else importlib.util.find_spec(name)
    if spec is None:
        return None  # not found: the import fails and says so
    if spec.origin not in (None, "namespace"):
        return _outside(spec.origin, repo)
    places = list(spec.submodule_search_locations or [])
    if not places:
        return "it has no file of its own"
    return next((why for why in (_foreign(p, repo) for p in places) if why), None)


def _foreign(path: str, repo: Path) -> str | None:
    import sysconfig  # only a dataset with python assertions gets here

    real = os.path.realpath(path)
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):  # a venv inside the repo too
        if is_inside(real, os.path.realpath(paths[key])):
            return f"it is {real}, an installed package or the standard library"
    if not is_inside(real, os.path.realpath(repo)):
        return f"it is {real}, outside the repository"
    return None


def _module_file(module: Any) -> str | None:
    if module.__name__ in sys.builtin_module_names:
        return "built-in"
    return getattr(module, "__file__", None)


def _refuse_foreign(spec: str, where: str, why: str) -> ConfigError:
    return ConfigError(
        f"{where}: function {spec!r}: not a function of the repository ({why}); a python "
        "assertion names a function defined in a .py file of the repository itself, never an "
        "installed or built-in one (`builtins:print` would write into cachelint's own output)"
    )


def _import(repo: Path, spec: str, where: str) -> Evaluator:
    module_name, _, attr = spec.partition(":")
    from_repository(repo, module_name)  # as for the python target
    try:
        parts = module_name.split(".")
        for parent in (".".join(parts[:i]) for i in range(1, len(parts))):
            if (why := _package_outside(parent, repo)) is not None:
                raise _refuse_foreign(spec, where, why)
        found = importlib.util.find_spec(module_name)
        if found is not None and (why := _outside(found.origin, repo)) is not None:
            raise _refuse_foreign(spec, where, why)
        module = importlib.import_module(module_name)
    except ConfigError:
        raise
    except (Exception, SystemExit) as exc:  # sys.exit(0) at import would end the run with 0
        raise ConfigError(
            f"{where}: function {spec!r}: cannot import module {module_name!r} from {repo} "
            f"({type(exc).__name__}: {exc}); the module path is relative to the repository root"
        ) from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise ConfigError(
            f"{where}: function {spec!r}: module {module_name!r} has no callable {attr!r}"
        )
    # The name may be re-exported (`from builtins import print as check`): what is called must
    # be defined in the repository too.
    defined = inspect.getmodule(function)
    why = _outside(_module_file(defined), repo) if defined else "its module is unknown"
    if why is not None:
        raise _refuse_foreign(spec, where, why)
    return function


def load_context(
    repo: Path,
    scenarios: Sequence[Scenario],
    *,
    interpretations: Mapping[str, Interpretation],
    prices: Mapping[str, Price],
    model: str,
) -> EvalContext:
    """Import every evaluator the scenarios name, before any model call: a typo in a module
    name is a usage error (exit 2), never a run of failed scenarios."""
    functions: dict[str, Evaluator] = {}
    for scenario in scenarios:
        for i, spec in enumerate(scenario.assertions):
            if spec["type"] == "python" and spec["function"] not in functions:
                where = f"{scenario.path}: assert[{i}]"
                functions[spec["function"]] = _import(repo, spec["function"], where)
    return EvalContext(functions, interpretations, prices, model)


def _python(
    spec: Mapping[str, Any], scenario: Scenario, output: Output, context: EvalContext
) -> tuple[AssertionResult, Metric | None]:
    name = spec["function"]
    function = context.functions.get(name)
    if function is None:  # the engine was handed a context that did not load this scenario
        return AssertionResult("python", False, f"python {name}: evaluator not loaded"), None
    options = {k: v for k, v in spec.items() if k not in ("type", "function")}
    try:
        returned = function(scenario, output, options)
    except (Exception, SystemExit) as exc:  # the evaluator failed: a failed scenario, not a crash
        first = str(exc).splitlines()[0] if str(exc) else ""
        reason = f"python {name}: the evaluator raised {type(exc).__name__}: {first}"
        return AssertionResult("python", False, reason), None
    from cachelint.runner.metrics import Rating, interpret, metric_from  # python assertions only

    try:
        metric = interpret(metric_from(returned), context.interpretations)
    except (TypeError, ValueError) as exc:
        return AssertionResult("python", False, f"python {name}: {exc}"), None
    verdict = f"{metric.name} = {metric.shown_value()} ({Rating(metric.rating).value}"
    verdict += ", failed" if metric.failed else ""
    verdict += ", reported only)" if not metric.gating else ")"
    detail = f": {metric.reason}" if metric.reason else ""
    return AssertionResult("python", not metric.gates, f"python {name}: {verdict}{detail}"), metric


def _latency(spec: Mapping[str, Any], calls: Sequence[CallRecord]) -> AssertionResult:
    limit = spec["max"]
    label = f"latency-ms (max {limit:g})"
    live = [c for c in calls if not c.hit]
    if not calls:
        return AssertionResult("latency-ms", False, f"{label}: no model call was made")
    if not live:
        # A cache hit's time is a disk lookup, not the provider's: there is nothing to compare.
        return AssertionResult(
            "latency-ms", True, f"{label}: not measured, every call was replayed from the cache"
        )
    total = sum(c.latency_s for c in live) * 1000
    verdict = total <= limit
    word = "within" if verdict else "over"
    return AssertionResult(
        "latency-ms", verdict, f"{label}: {total:.0f} ms over {len(live)} live call(s), {word}"
    )


def _cost(
    spec: Mapping[str, Any], calls: Sequence[CallRecord], context: EvalContext
) -> AssertionResult:
    limit = spec["max"]
    label = f"cost (max {format_dollars(limit)})"
    if not calls:
        return AssertionResult("cost", False, f"{label}: no model call was made")
    total = 0.0
    for call in calls:
        # Priced by the one rule every report uses, so the check and the reports agree.
        spend = call_spend(call.usage, call.model, call.response, context.model, context.prices)
        if not spend.complete:
            why = unpriced_reason(spend, context.prices)
            return AssertionResult("cost", False, f"{label}: {call.entry}: {why}")
        total += spend.dollars
    verdict = total <= limit
    word = "within" if verdict else "over"
    return AssertionResult(
        "cost", verdict, f"{label}: {format_dollars(total)} for {len(calls)} call(s), {word}"
    )


def evaluate_all(
    scenario: Scenario,
    output: Output,
    calls: Sequence[CallRecord],
    context: EvalContext,
) -> tuple[tuple[AssertionResult, ...], tuple[Metric, ...]]:
    """Every assertion of `scenario` against `output` (and the target's recorded `calls`), and
    the metrics its custom evaluators returned, in dataset order."""
    results: list[AssertionResult] = []
    metrics: list[Metric] = []
    for spec in scenario.assertions:
        kind = spec["type"]
        if kind == "python":
            result, metric = _python(spec, scenario, output, context)
            results.append(result)
            if metric is not None:
                metrics.append(metric)
        elif kind == "latency-ms":
            results.append(_latency(spec, calls))
        elif kind == "cost":
            results.append(_cost(spec, calls, context))
        else:
            results.append(evaluate(spec, output, calls, scenario.tools))
    return tuple(results), tuple(metrics)


def eval_context(repo: Path, scenarios: Sequence[Scenario], config: Config) -> EvalContext:
    """`load_context` with the tables and model from `config`."""
    return load_context(
        repo,
        scenarios,
        interpretations=config.interpretations,
        prices=config.prices,
        model=config.target.model,
    )
