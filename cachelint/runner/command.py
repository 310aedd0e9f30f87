"""The command target: any program (a .NET test filter, a Node script, curl) run per scenario.

`command = ["dotnet", "test", "--filter", "Category=Eval"]` runs once per scenario trial from the
repository root with the scenario's cache endpoint in its environment, the way every OpenAI SDK
reads it: `OPENAI_BASE_URL` (ending in /v1, where the SDK appends /chat/completions) and
`OPENAI_API_KEY` (a placeholder), and as Anthropic's SDKs read it: `ANTHROPIC_BASE_URL` (where
they append /v1/messages) and `ANTHROPIC_API_KEY`, and as Azure OpenAI's read it:
`AZURE_OPENAI_ENDPOINT` (where they append /openai/deployments/...) and `AZURE_OPENAI_API_KEY`,
and as the AWS SDKs read it for Bedrock: `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, with the placeholder
as `AWS_ACCESS_KEY_ID` (and a placeholder secret): the program's own AWS credentials are withheld,
so its calls to other AWS services have none under `cachelint run`.
`CACHELINT_SCENARIO`, `CACHELINT_TRIAL` and `CACHELINT_SCENARIO_FILE` say which scenario to
play. Its stdout is the output the assertions see. In replay a scenario whose program made no model
call through the cache fails (its answer came from elsewhere), unless the dataset declares
`"model-calls": false`.

The target's real key variable is removed from the program's environment: a program that ignored
OPENAI_BASE_URL must fail, not quietly call the provider around the cache. In replay its Python
children are guarded and its proxy is a refusing one (`cachelint.runner.childguard`), so one that
reaches for the network fails its scenario naming the host.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from cachelint.errors import CachelintError
from cachelint.runner.childguard import offline_children
from cachelint.runner.client import CacheMiss, CachingClient
from cachelint.runner.dataset import Scenario
from cachelint.runner.endpoint import PLACEHOLDER_KEY
from cachelint.runner.output import Output, output_from_value
from cachelint.runner.pytarget import Target

_STDERR_LINES = 5
_TIMEOUT_S = 600.0  # a scenario's run of the command
# Credentials an SDK would send instead of the placeholder key, never handed to the program:
# Azure's clients prefer an Entra token from the environment to AZURE_OPENAI_API_KEY; the AWS
# SDKs prefer a Bedrock API key to signing, and a profile's credentials or a session token would
# change what they sign with.
_TOKENS = frozenset(
    {
        "AZURE_OPENAI_AD_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
    }
)


def command_target(
    repo: Path,
    argv: Sequence[str],
    *,
    hidden_env: Sequence[str] = (),
    offline: bool = False,
) -> Target:
    """A target running `argv` once per scenario trial; `hidden_env` names variables (the real
    API key's) the program must not see; `offline` (replay) keeps its children off the network
    as far as `cachelint.runner.childguard` can."""
    command = list(argv)
    shown = shlex.join(command)

    def target(scenario: Scenario, client: CachingClient) -> Output:
        env = _environment(scenario, client, hidden_env)
        guard: AbstractContextManager[dict[str, str]] = (
            offline_children(client, env) if offline else nullcontext({})
        )
        try:
            with guard as extra:
                done = subprocess.run(
                    command,
                    cwd=repo,
                    env={**env, **extra},
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=_TIMEOUT_S,
                    check=False,
                )
        except FileNotFoundError:
            raise CachelintError(
                f"target command `{shown}`: {command[0]!r} not found; install it or fix "
                "`command` in the target's config"
            ) from None
        except subprocess.TimeoutExpired:
            raise CachelintError(
                f"target command `{shown}` ran longer than {_TIMEOUT_S:g} s for scenario "
                f"{scenario.identity}"
            ) from None
        finally:
            if client.endpoint is not None:
                client.endpoint.release(client)
        if client.misses:
            # The program saw the miss as an HTTP error; the miss explanation says how to fix it.
            raise CacheMiss(client.misses[0])
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-_STDERR_LINES:]
            detail = (": " + " | ".join(tail)) if tail else ""
            raise CachelintError(
                f"target command `{shown}` exited {done.returncode} for scenario "
                f"{scenario.identity}{detail}"
            )
        if offline and scenario.model_calls and not client.calls:
            raise CachelintError(_no_call(scenario, shown))
        text = done.stdout.decode("utf-8", "replace")
        return output_from_value(text.removesuffix("\n").removesuffix("\r"))

    return target


def _environment(
    scenario: Scenario, client: CachingClient, hidden_env: Sequence[str]
) -> dict[str, str]:
    """The program's environment: this process's, without the real key or a token an SDK would
    send instead, with the scenario's cache endpoint wherever each SDK reads it."""
    env = {k: v for k, v in os.environ.items() if k not in hidden_env and k not in _TOKENS}
    env.update(
        OPENAI_BASE_URL=client.base_url,
        OPENAI_API_KEY=client.api_key,
        ANTHROPIC_BASE_URL=client.anthropic_base_url,
        ANTHROPIC_API_KEY=client.api_key,
        # Google's SDKs take no base URL from the environment; a real key must not reach them
        # either.
        GEMINI_API_KEY=client.api_key,
        GOOGLE_API_KEY=client.api_key,
        AZURE_OPENAI_ENDPOINT=client.azure_endpoint,
        AZURE_OPENAI_API_KEY=client.api_key,
        # The AWS SDKs sign with these; the endpoint reads the access key id. (They send a
        # Bedrock API key only over HTTPS, so none is given.)
        AWS_ENDPOINT_URL_BEDROCK_RUNTIME=client.bedrock_endpoint_url,
        AWS_ACCESS_KEY_ID=client.api_key,
        AWS_SECRET_ACCESS_KEY=PLACEHOLDER_KEY,
        CACHELINT_SCENARIO=scenario.identity,
        CACHELINT_TRIAL=str(client.trial),
        CACHELINT_SCENARIO_FILE=scenario.path,
    )
    return env


def _no_call(scenario: Scenario, shown: str) -> str:
    """Why a replayed scenario whose program made no model call fails: its answer came from
    somewhere else than the cache (a cache of its own, a key of its own), as a python target's
    would (`netguard.guard_target`)."""
    return (
        f"scenario {scenario.identity}: the target command `{shown}` made no model call through "
        "the cache, so its answer did not come from the cache; have its SDK read "
        "OPENAI_BASE_URL (or the other endpoint variables it is given) and turn off any "
        "response cache of its own, or, if the program makes no model call at all, declare "
        f'"model-calls": false in {scenario.path}'
    )
