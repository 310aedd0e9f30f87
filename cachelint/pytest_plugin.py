"""The pytest plugin: a team's own tests replay their model calls from the committed cache.

    @pytest.mark.eval
    def test_refund(cachelint):
        sdk = openai.OpenAI(base_url=cachelint.base_url, api_key=cachelint.api_key,
                            http_client=cachelint.http_client())
        answer = sdk.chat.completions.create(model="gpt-4o-mini", messages=[...])
        assert "30 days" in answer.choices[0].message.content

The fixture `cachelint` is a `CachingClient` for the test: its scenario identity is the test's
node id (made a portable path: `tests/test_bot.py/test_refund/acme` for
`tests/test_bot.py::test_refund[acme]`), recording upstream through `[tool.cachelint.target]`.
`--cachelint-cache MODE` picks the mode (replay by default: offline, a miss fails the test with
the miss explanation, even when the test swallowed the SDK's error, and so does any network
access but the cache endpoint's, naming the host, as under `cachelint run`). The marker `eval` lets
`pytest -m eval` select the eval tests of a project's suite. What it records is an ordinary
cachelint cache, linted by `cachelint check` like any other.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cachelint.frontdoors import scenario_identity

_CLIENT = pytest.StashKey[Any]()
_SESSION = pytest.StashKey[dict[str, Any]]()
_SETTINGS = pytest.StashKey[dict[str, Any]]()
_PASS = pytest.StashKey[Any]()  # pytest_pass.PassState
# What a refusal in an eval test advises (`netguard.Advice`): where model calls must go, and how
# to record instead.
_CALLS = "make model calls through the cachelint fixture: its base_url, api_key and http_client()"
_RECORD = "rerun pytest with --cachelint-cache auto to record"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cachelint")
    group.addoption(
        "--cachelint-cache",
        metavar="MODE",
        default="replay",
        help="replay (default: offline, a miss fails the test), auto (record misses), live "
        "(re-record), off (live, record nothing)",
    )


def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    """In replay, the switches of the calls frameworks make of their own accord that they read
    when imported (`netguard.READ_AT_IMPORT`) are set before the first conftest file or test
    module can import a framework; each eval test's replay sets the others."""
    from cachelint import netguard
    from cachelint.runner.client import Mode

    if getattr(early_config.known_args_namespace, "cachelint_cache", None) == Mode.REPLAY.value:
        early_config.add_cleanup(netguard.switch_off(netguard.READ_AT_IMPORT))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "eval: an eval of model behaviour, answered from the cachelint cache"
    )
    from cachelint.errors import CachelintError, parse_choice
    from cachelint.runner.client import Mode

    value = config.getoption("cachelint_cache")
    try:
        parse_choice(Mode, value, option="--cachelint-cache", what="a cache mode")
    except CachelintError as exc:
        # A typo must never run the suite in another mode.
        raise pytest.UsageError(f"cachelint: {exc}") from None
    from cachelint.pytest_pass import PassState

    state = PassState()
    config.stash[_PASS] = state
    config.pluginmanager.register(_Tracker(config, state), "cachelint-pass")


def _settings(config: pytest.Config) -> dict[str, Any]:
    """The session's config, mode, clock and name, read on first use."""
    if _SETTINGS in config.stash:
        return config.stash[_SETTINGS]
    from cachelint import clock
    from cachelint.config import load
    from cachelint.errors import CachelintError
    from cachelint.gitutil import repo_root
    from cachelint.runner.client import Mode

    try:
        mode = Mode(config.getoption("cachelint_cache"))
        repo = repo_root(Path(config.rootpath))
        settings = load(repo)
        moment = clock.now()
    except CachelintError as exc:
        raise pytest.UsageError(f"cachelint: {exc}") from None
    found = {
        "settings": settings,
        "mode": mode,
        "moment": moment,
        "session": "pytest-" + moment.strftime("%Y%m%dT%H%M%SZ"),
    }
    config.stash[_SETTINGS] = found
    return found


def _session(config: pytest.Config) -> dict[str, Any]:
    """`_settings` plus the store and the endpoint, made when the first test uses the fixture;
    a session that may record marks it (`usage.mark_recording`) before the first entry."""
    if _SESSION in config.stash:
        return config.stash[_SESSION]
    from cachelint.errors import CachelintError
    from cachelint.frontdoors import FrontDoor
    from cachelint.runner.endpoint import Endpoint
    from cachelint.store import Store
    from cachelint.usage import mark_recording

    state = dict(_settings(config))
    settings, mode, moment = state["settings"], state["mode"], state["moment"]
    if mode.records:
        try:
            # Until a full pass replaces it, prune keeps what this session records.
            mark_recording(settings, FrontDoor.PYTEST, execution=state["session"], mode=mode.value)
        except CachelintError as exc:
            raise pytest.UsageError(f"cachelint: {exc}") from None
    state["store"] = Store.configured(settings, moment)
    endpoint = Endpoint()
    state["endpoint"] = endpoint
    config.stash[_SESSION] = state
    config.add_cleanup(endpoint.close)
    return state


@pytest.fixture
def cachelint(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A `CachingClient` serving this test from the cache: `base_url`, `api_key`,
    `http_client()`, or `chat(messages, ...)`."""
    from cachelint.runner.client import CachingClient, OfflineRefuser, Recorder
    from cachelint.runner.wiring import upstream_transport

    state = _session(request.config)
    settings = state["settings"]
    target = settings.target
    nodeid = request.node.nodeid
    transport: Any = (
        upstream_transport(settings.repo, target) if state["mode"].calls_live else OfflineRefuser()
    )
    client = CachingClient(
        store=state["store"],
        scenario=scenario_identity(nodeid),
        trial=0,
        mode=state["mode"],
        transport=transport,
        provider=target.provider,
        model=target.model,
        recorder=Recorder(
            command=f"pytest {shlex.quote(nodeid)} --cachelint-cache live",
            url=target.url,
            api_key_env=target.api_key_env,
            env_file=target.env_file,
        ),
        repo_prefix=settings.cache[0],
        params=dict(target.params),
        endpoint=state["endpoint"],
        normalise=settings.normalise,
        redact=settings.redact,
    )
    request.node.stash[_CLIENT] = client
    passing = _pass(request.config)
    passing.used_fixture = True
    try:
        yield client
    finally:
        passing.reached.setdefault(nodeid, set()).update(c.entry for c in client.calls)
        state["endpoint"].release(client)
        close = getattr(transport, "close", None)
        if callable(close):
            close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that uses the fixture fails on a miss, with its explanation, and in replay on any
    network access but the cache endpoint's, naming the host, as a target of `cachelint run`
    does: whatever the test did with the error."""
    from cachelint import netguard

    client = item.stash.get(_CLIENT, None)
    hosts: list[str] = []
    try:
        allow = _session(item.config)["settings"].allow_hosts if client is not None else ()
        with _offline(client, allow) as hosts:
            return (yield)
    finally:
        if client is not None and client.misses:
            pytest.fail(client.misses[0], pytrace=False)
        if client is not None and hosts:
            refused = netguard.refusal(client.scenario, hosts, netguard.Advice(_CALLS, _RECORD))
            pytest.fail(str(refused), pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """An eval test marked `eval(trials=n)` runs n times, trial t with its own client (its own
    keys from trial 1 on, as a dataset's trials), and passes by the `pass` policy: the marker's
    `pass_`, else the config's `trials-pass`, else every trial. A failed assertion fails its
    trial; a miss, a refused host or any other exception fails the test whatever the policy."""
    client = pyfuncitem.stash.get(_CLIENT, None)
    marker = pyfuncitem.get_closest_marker("eval")
    if client is None or marker is None or not marker.kwargs:
        return None  # pytest's own call
    trials, policy = _trial_plan(pyfuncitem, marker.kwargs)
    verdicts, reasons = _run_trials(pyfuncitem, client, trials)
    shown = " ".join("pass" if v else "FAIL" for v in verdicts)
    passed = sum(verdicts)
    label = f"{passed}/{trials} trials ({passed / trials:.0%}; pass {policy.describe()}: {shown})"
    pyfuncitem.user_properties.append(("cachelint_trials", label))
    _pass(pyfuncitem.config).notes.append(f"{pyfuncitem.nodeid}: {label}")
    if not policy.passes(verdicts, errored=False):
        pytest.fail("\n".join([label, *reasons]), pytrace=False)
    return True


def _trial_plan(item: pytest.Function, kwargs: Any) -> tuple[int, Any]:
    """The trials of `@pytest.mark.eval(trials=n, pass_=...)` and the policy as it applies to
    them; a bad argument fails the test with one line."""
    import inspect

    from cachelint.errors import CachelintError
    from cachelint.passpolicy import parse_policy
    from cachelint.runner.dataset import MAX_TRIALS

    where = f"{item.nodeid}: @pytest.mark.eval"
    unknown = sorted(set(kwargs) - {"trials", "pass_"})
    if unknown:
        pytest.fail(f"{where}: unknown argument {unknown[0]!r}; it takes trials=, pass_=", False)
    trials = kwargs.get("trials", 1)
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_TRIALS:
        pytest.fail(f"{where}: trials={trials!r}: expected an integer, 1 to {MAX_TRIALS}", False)
    if trials > 1 and inspect.iscoroutinefunction(item.obj):
        pytest.fail(f"{where}: trials need a synchronous test function; run the loop in it", False)
    if "pass_" not in kwargs:
        return trials, _session(item.config)["settings"].trials_pass.for_trials(trials)
    try:
        return trials, parse_policy(kwargs["pass_"], trials, f"{where}(pass_=...)")
    except CachelintError as exc:
        pytest.fail(str(exc), pytrace=False)


def _run_trials(item: pytest.Function, client: Any, trials: int) -> tuple[list[bool], list[str]]:
    """Each trial's verdict (False: an assertion failed) and each failed trial's reason."""
    from dataclasses import replace

    args = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
    reached = _pass(item.config).reached.setdefault(item.nodeid, set())
    verdicts: list[bool] = []
    reasons: list[str] = []
    for t in range(trials):
        trial = client if t == 0 else replace(client, trial=t, calls=[], misses=[])
        try:
            item.obj(**{**args, "cachelint": trial})
            verdicts.append(True)
        except (AssertionError, pytest.fail.Exception) as exc:
            verdicts.append(False)
            reasons.append(f"trial {t}: {str(exc).strip() or type(exc).__name__}")
        except Exception:
            if not trial.misses:
                raise
        finally:
            reached.update(c.entry for c in trial.calls)
            if trial is not client:
                client.endpoint.release(trial)
        if trial.misses:  # whatever the test did with the error, as for trial 0's client
            pytest.fail(trial.misses[0], pytrace=False)
    return verdicts, reasons


@contextmanager
def _offline(client: Any, allow: Any = ()) -> Iterator[list[str]]:
    """In replay, the network refused but for the cache endpoint (`cachelint.netguard`), in the
    test's process and in the Python and Node.js processes it starts (`childguard`); the hosts
    refused, on the way out."""
    from cachelint import netguard
    from cachelint.runner.childguard import offline_target_children

    if client is None or client.mode.calls_live:
        yield []
        return
    with (
        netguard.allowing(allow),  # the agent's own services (`allow-hosts`)
        netguard.armed(replay=True, advice=netguard.Advice(_CALLS, _RECORD)),
        netguard.played(client.scenario) as hosts,
        offline_target_children(client.endpoint.port, client.endpoint.token) as drain,
    ):
        try:
            yield hosts
        finally:
            drain()


# ---- the full pass: which entries the eval tests reached, and the green record ----------------


def _pass(config: pytest.Config) -> Any:
    return config.stash[_PASS]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that uses the fixture is an eval: marked before `-m` selects, so `pytest -m eval`
    runs every test whose entries prune must keep."""
    for item in items:
        if "cachelint" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("eval"):
            item.add_marker("eval")


class _Tracker:
    """The hooks that see whether this session is a full pass of the eval tests, and, at its
    end, record it (`pytest_pass`)."""

    def __init__(self, config: pytest.Config, state: Any) -> None:
        self.config = config
        self.state = state

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.state.deselected += sum(1 for i in items if i.get_closest_marker("eval") is not None)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.state.collect_errors += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from cachelint.pytest_pass import eval_items

        self.state.eval_ids = [i.nodeid for i in eval_items(session.items)]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.state.report(report.nodeid, report.when, report.outcome)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from cachelint import clock
        from cachelint.errors import CachelintError
        from cachelint.pytest_pass import conclude, partial_reason

        state = self.state
        if not state.eval_ids and not state.used_fixture:
            return  # no eval test here: nothing to prove, and nothing to load
        why = partial_reason(
            self.config, state, interrupted=exitstatus == pytest.ExitCode.INTERRUPTED
        )
        try:
            found = _settings(self.config)
            conclude(
                found["settings"],
                state,
                session=found["session"],
                mode=found["mode"].value,
                now=clock.now(),
                why=why,
            )
        except (CachelintError, pytest.UsageError) as exc:
            state.notes.append(f"error: {exc}")
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from cachelint.display import sanitize

        for note in self.state.notes:
            terminalreporter.write_line(sanitize(f"cachelint: {note}"))
