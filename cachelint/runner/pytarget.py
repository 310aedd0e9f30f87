"""The python target: `target.function = "module:function"`, called with (scenario, client).

A team's real agent code (several model calls, tool round trips) runs unchanged under record and
replay: it receives a `CachingClient`, and either calls `client.chat(...)` or hands any provider
SDK `client.base_url` and `client.api_key` (the cache endpoint), optionally with
`client.http_client()` to skip the socket. Every model call it makes is its own cache entry. The
function may be `async def`; its return value becomes an `Output` via `output_from_value`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError, ConfigError
from cachelint.paths import is_inside
from cachelint.runner.client import CachingClient
from cachelint.runner.dataset import Scenario
from cachelint.runner.output import Output, output_from_completion, output_from_value

Target = Callable[[Scenario, CachingClient], Output]


class TargetExited(CachelintError):
    """A python target raised SystemExit (`sys.exit`): its scenario fails, the run goes on."""


def chat_target(scenario: Scenario, client: CachingClient) -> Output:
    """The default target: one chat call with the scenario's messages, options and tools."""
    completion = client.chat(
        scenario.messages, options=scenario.options or None, tools=scenario.tools or None
    )
    return output_from_completion(completion)


def from_repository(repo: Path, module_name: str) -> None:
    """Make `module_name` import from the repository root, as `python -m` would from there (the
    module lives in the repository, not in site-packages), forgetting another repository's module
    of the same name imported earlier in this process."""
    root = str(repo)
    if root not in sys.path:
        sys.path.insert(0, root)
    stale = sys.modules.get(module_name)
    stale_file = getattr(stale, "__file__", None)  # None for a namespace package: keep it
    if stale_file and not is_inside(os.path.abspath(stale_file), os.path.abspath(root)):
        del sys.modules[module_name]


def load_target(repo: Path, spec: str, source: str = "config") -> Target:
    """Import `module:function` from the repository root and wrap it as a target."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f'{source} [target]: function = {spec!r}: expected "module:function", '
            'e.g. "agents.support:answer"'
        )
    from_repository(repo, module_name)
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # sys.exit(0) at import would end the run with 0
        raise ConfigError(
            f"{source} [target]: function = {spec!r}: cannot import module {module_name!r} "
            f"from {repo} ({type(exc).__name__}: {exc}); the module path is relative to the "
            "repository root"
        ) from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise ConfigError(
            f"{source} [target]: function = {spec!r}: module {module_name!r} has no callable "
            f"{attr!r}"
        )

    def target(scenario: Scenario, client: CachingClient) -> Output:
        try:
            value: Any = function(scenario, client)
            if inspect.isawaitable(value):
                # An `async def` agent: each scenario runs its own event loop in its own worker.
                # asyncio (and ssl with it) is imported here: a synchronous suite never needs it.
                import asyncio

                value = asyncio.run(_awaited(value))
        except SystemExit as exc:
            # Left to propagate, `sys.exit(0)` in agent code ended the run with exit code 0 and
            # no results: a failure reported as success.
            raise TargetExited(
                f"the target called sys.exit({exc.code!r}); a target returns its answer and never "
                "ends the run (call the agent's function, not its command-line entry point)"
            ) from None
        finally:
            if client.endpoint is not None:
                client.endpoint.release(client)
        return output_from_value(value)

    return target


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value
