"""Wiring a run: which target each scenario runs, and the caching client each trial gets.

Each scenario resolves to one named target (its `"target"` field, else its agent's, else
`[tool.cachelint.target]`); each target has its own provider, model, params, upstream transport and
kind of code (the plain chat call, a python function, a command). Judges may run on another target
(`[tool.cachelint.judge] target`). The cache endpoint is started only when a python or command
target may need it; `close` stops it and lifts the guard on python targets' children.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachelint.config import Config, TargetConfig
from cachelint.masks import redact_url
from cachelint.netguard import allowing, armed, guard_target
from cachelint.runner.client import CachingClient, Mode, OfflineRefuser, Recorder, Transport
from cachelint.runner.dataset import Scenario
from cachelint.runner.output import Output
from cachelint.runner.pytarget import Target, chat_target, load_target
from cachelint.store import Store
from cachelint.targets import target_name

if TYPE_CHECKING:
    from cachelint.runner.endpoint import Endpoint

TransportFactory = Callable[[TargetConfig], Transport]


def upstream_transport(repo: Path, target: TargetConfig) -> Transport:
    """The live transport a recording calls: the target's url, its key from api-key-env or
    env-file. Params are not added here: the client already put them into the body (and key)."""
    from cachelint.credentials import load_api_key
    from cachelint.runner.providers.transport import OpenAICompatibleTransport

    return OpenAICompatibleTransport(
        target.url,
        api_key=load_api_key(repo, target.api_key_env, target.env_file),
        params={},
        timeout=target.timeout,
        max_retries=target.max_retries,
        api_key_env=target.api_key_env,
        env_file=target.env_file,
    )


def http_transport(repo: Path, target: TargetConfig) -> Any:
    """An http target's live side: its headers, and its key from api-key-env or env-file."""
    from cachelint.credentials import load_api_key
    from cachelint.runner.httptarget import HttpTransport

    key = load_api_key(repo, target.api_key_env, target.env_file) if target.api_key_env else None
    return HttpTransport(target, key)


@dataclass
class Wiring:
    config: Config
    store: Store
    mode: Mode
    rerecord: Callable[[Scenario], str]  # the command a miss prints
    transport_factory: TransportFactory
    names: dict[str, str] = field(default_factory=dict)  # scenario identity -> target name
    _targets: dict[str, Target] = field(default_factory=dict)
    _transports: dict[str, Any] = field(default_factory=dict)
    endpoint: Endpoint | None = None
    # Reports what a python target's children refused (`keep_children_offline`), when replaying.
    _drain: Callable[[], None] | None = None
    _guard: ExitStack = field(default_factory=ExitStack)

    def target(self, scenario: Scenario, client: CachingClient) -> Output:
        return self._targets[self.names[scenario.identity]](scenario, client)

    def keep_children_offline(self) -> None:
        """From now until `close`, a replay keeps the python targets' child processes off the
        network (`childguard.offline_target_children`), those a target starts as its module is
        imported too; a recording, or a run without a python target, is left alone."""
        python = any(self.config.named_target(n).type == "python" for n in set(self.names.values()))
        if self.mode.calls_live or not python or self.endpoint is None:
            return
        from cachelint.runner.childguard import offline_target_children

        guarded = offline_target_children(self.endpoint.port, self.endpoint.token)
        self._drain = self._guard.enter_context(guarded)

    def _draining(self, target: Target) -> Target:
        """`target`, then what its children refused reported before its scenario ends."""

        def drained(scenario: Scenario, client: CachingClient) -> Output:
            try:
                return target(scenario, client)
            finally:
                if self._drain is not None:
                    self._drain()

        return drained

    def make_client(self, scenario: Scenario, trial: int) -> CachingClient:
        name = self.names[scenario.identity]
        client = self._client(name, scenario, trial)
        judge = self.config.judge
        if judge.target is not None and scenario.judges:
            client.judge_client = self._client(judge.target, scenario, trial)
        client.rubrics = judge.metrics
        return client

    def _client(self, name: str, scenario: Scenario, trial: int) -> CachingClient:
        target = self.config.named_target(name)
        recorder = Recorder(
            command=self.rerecord(scenario),
            url=redact_url(target.url),
            api_key_env=target.api_key_env,
            env_file=target.env_file,
        )
        return CachingClient(
            store=self.store,
            scenario=scenario.cache_identity,  # a matrix pair's entries are its scenario's
            trial=trial,
            mode=self.mode,
            transport=self._transport(name, target),
            provider=target.provider,
            model=target.model,
            recorder=recorder,
            repo_prefix=self.config.cache[0],
            params=dict(target.params),
            endpoint=self.endpoint,
            normalise=self.config.normalise,
            redact=self.config.redact,
        )

    def _transport(self, name: str, target: TargetConfig) -> Any:
        if not self.mode.calls_live:
            return OfflineRefuser()
        if name not in self._transports:
            self._transports[name] = (
                http_transport(self.config.repo, target)
                if target.type == "http"
                else self.transport_factory(target)
            )
        return self._transports[name]

    def close(self) -> None:
        self._guard.close()
        self._drain = None
        if self.endpoint is not None:
            self.endpoint.close()
        for transport in self._transports.values():
            close = getattr(transport, "close", None)
            if callable(close):
                close()


def wire(
    config: Config,
    *,
    scenarios: Sequence[Scenario],
    store: Store,
    mode: Mode,
    rerecord: Callable[[Scenario], str],
    transport_factory: TransportFactory | None = None,
) -> Wiring:
    """Resolve every scenario's target and load each used target's code (a bad target is a
    configuration error before any scenario runs). In a replay, a python target's children are
    kept offline from before its module is imported, so those its module-level code starts (an
    MCP server over stdio, say) are too."""
    repo = config.repo
    wiring = Wiring(
        config,
        store,
        mode,
        rerecord,
        transport_factory or (lambda target: upstream_transport(repo, target)),
    )
    for s in scenarios:
        wiring.names[s.identity] = target_name(config, agent=s.agent, chosen=s.target, where=s.path)
    used = {config.named_target(name).type for name in wiring.names.values()}
    if used & {"python", "command"}:
        from cachelint.runner.endpoint import Endpoint

        wiring.endpoint = Endpoint()
    try:  # the agent's own services (`allow-hosts`), for this process and its children
        wiring._guard.enter_context(allowing(config.allow_hosts))
        wiring.keep_children_offline()
        _load_targets(wiring, repo, config, mode)
    except BaseException:
        wiring.close()
        raise
    return wiring


def _load_targets(wiring: Wiring, repo: Path, config: Config, mode: Mode) -> None:
    """Each used target's code, wrapped as the mode asks."""
    for name in sorted(set(wiring.names.values())):
        target = config.named_target(name)
        if target.type == "python" and target.function:
            with armed(replay=not mode.calls_live):  # module-level code is the target's too
                wiring._targets[name] = wiring._draining(
                    load_target(repo, target.function, config.source)
                )
        elif target.type == "http":
            from cachelint.runner.httptarget import http_target

            wiring._targets[name] = http_target(target)
        elif target.type == "command":
            from cachelint.runner.command import command_target

            wiring._targets[name] = command_target(
                repo, target.command, hidden_env=(target.api_key_env,), offline=not mode.calls_live
            )
        else:
            wiring._targets[name] = chat_target
        if not mode.calls_live:
            # Replay fails closed: a target that reaches for the network, or a python target
            # that never calls through the cache, fails its scenario (`cachelint.netguard`).
            wiring._targets[name] = guard_target(
                wiring._targets[name], must_use_cache=target.type == "python"
            )
