"""Benchmark the `openai` SDK replaying recorded calls through cachelint, against the SDK's floor.

    python benchmarks/bench_endpoint.py                       # 200, 2,000 and 20,000 calls
    python benchmarks/bench_endpoint.py --sizes 200 2000
    python benchmarks/bench_endpoint.py --vcr-calls 2000      # vcrpy's share (default 2,000)
    python benchmarks/bench_endpoint.py --api responses       # the Responses API's calls

Every variant makes the same N calls with the real SDK (`openai.OpenAI`, one client, a distinct
user message per call): chat completions, or with `--api responses` `client.responses.create`
(the Responses API, which the OpenAI Agents SDK calls). It reports ms/call:

- floor: the SDK answered by `MockTransport` of its own HTTP library (httpx2 for openai 3.x) with
  a canned completion: request building and response parsing only, no transport can be cheaper;
- in-process: `client.http_client()`, cachelint's transport answering from the committed cache;
- loopback: the SDK over a socket to the cache endpoint on 127.0.0.1 (`client.base_url`);
- vcrpy (when installed): one cassette per call, as pytest-recording's per-test cassettes, replayed
  with record_mode "none" (the cassettes are recorded once against the fake provider over HTTP).

The cache is recorded once per size through the caching client against the in-process fake
provider (no HTTP), in a temp directory. Each size then runs `--repeat` rounds of one pass per
variant (floor, in-process, loopback); it prints each variant's median ms/call and the median of
the rounds' ratios to the floor, and a flatness line comparing the smallest and largest sizes
(`--sizes 200 2000` for a quick check). Goal: in-process <= 1.5x the floor, flat from 200 to
20,000 calls, and faster than vcrpy.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from cachelint.devtools.fake_provider import FakeProvider, parse_script, running  # noqa: E402
from cachelint.runner.client import CachingClient, Mode, OfflineRefuser, Recorder  # noqa: E402
from cachelint.runner.endpoint import Endpoint, default_library  # noqa: E402
from cachelint.store import Store  # noqa: E402

SCRIPT = {"rules": [{"match": {}, "reply": {"echo": True}}]}
MODEL = "bench-model"


@dataclass(frozen=True)
class _Completion:
    response: Any
    latency_s: float = 0.0


class _InProcessFake:
    def __init__(self) -> None:
        self.provider = FakeProvider(parse_script(dict(SCRIPT), source="<bench>"))

    def complete(
        self, body: Mapping[str, Any], route: str = "chat/completions", headers: Any = None
    ) -> _Completion:
        raw = json.dumps(dict(body)).encode("utf-8")
        status, _, data = self.provider.respond("POST", f"/v1/{route}", {}, raw)
        assert status == 200, data
        return _Completion(json.loads(data))


@dataclass(frozen=True)
class _Api:
    """One API's call: its body for call `i`, how the SDK makes it, and the text it answered."""

    route: str
    body: Callable[[int], dict[str, Any]]
    call: Callable[[openai.OpenAI, dict[str, Any]], Any]
    text: Callable[[Any], str]


def _question(i: int) -> str:
    return f"question number {i}: where is my order?"


APIS = {
    "chat": _Api(
        "chat/completions",
        lambda i: {"model": MODEL, "messages": [{"role": "user", "content": _question(i)}]},
        lambda sdk, body: sdk.chat.completions.create(**body),
        lambda reply: reply.choices[0].message.content,
    ),
    "responses": _Api(
        "responses",
        lambda i: {"model": MODEL, "input": _question(i)},
        lambda sdk, body: sdk.responses.create(**body),
        lambda reply: reply.output_text,
    ),
}
API = APIS["chat"]  # set by --api


def _client(root: Path, mode: Mode, transport: Any, endpoint: Endpoint) -> CachingClient:
    return CachingClient(
        store=Store(root),
        scenario="bench/sdk/replay",
        trial=0,
        mode=mode,
        transport=transport,
        provider="cachelint-fake",
        model=MODEL,
        recorder=Recorder("cachelint run --refresh-cache", "http://127.0.0.1:9/v1", "KEY", None),
        endpoint=endpoint,
    )


def _calls(sdk: openai.OpenAI, n: int) -> float:
    bodies = [API.body(i) for i in range(n)]
    started = time.perf_counter()
    for body in bodies:
        assert API.text(API.call(sdk, body))
    return (time.perf_counter() - started) / n * 1000


def _best(run: Callable[[], float], repeat: int) -> float:
    """The median pass, never the best one: a best run flatters whichever side got lucky."""
    return statistics.median(run() for _ in range(repeat))


def _floor_sdk() -> openai.OpenAI:
    library = importlib.import_module(default_library())
    canned = _InProcessFake().complete(API.body(0), API.route).response
    body = json.dumps(canned).encode("utf-8")

    def handle(request: Any) -> Any:
        return library.Response(200, headers={"Content-Type": "application/json"}, content=body)

    return openai.OpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="x",
        http_client=library.Client(transport=library.MockTransport(handle)),
    )


def floor(n: int, repeat: int) -> float:
    sdk = _floor_sdk()
    return _best(lambda: _calls(sdk, n), repeat)


@contextlib.contextmanager
def _no_fsync() -> Iterator[None]:
    """Recording 20,000 entries with an fsync each takes minutes here; replay reads the same
    bytes without it, and a benchmark's temp cache needs no crash safety."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


@dataclass(frozen=True)
class Size:
    """One size's ms/call: the medians of paired passes, and the median of the passes' ratios."""

    n: int
    floor: float
    inside: float
    loopback: float
    inside_ratio: float
    loopback_ratio: float


def paired_size(n: int, repeat: int) -> Size:
    """Record `n` calls, then `repeat` rounds of one pass each of the floor, in-process and
    loopback, in that order: each round's ratios compare passes taken on the same machine state."""
    with tempfile.TemporaryDirectory(prefix="cachelint-bench-") as tmp, Endpoint() as endpoint:
        root = Path(tmp) / "eval-cache"
        recorder = _client(root, Mode.LIVE, _InProcessFake(), endpoint)
        with _no_fsync():
            for i in range(n):
                if API.route == "chat/completions":
                    recorder.complete_body(API.body(i))
                else:
                    recorder.sdk_body(API.route, API.body(i))
        client = _client(root, Mode.REPLAY, OfflineRefuser(), endpoint)
        in_process = openai.OpenAI(
            base_url=client.base_url, api_key=client.api_key, http_client=client.http_client()
        )
        loopback = openai.OpenAI(base_url=client.base_url, api_key=client.api_key)
        base_sdk = _floor_sdk()
        rounds = [
            (_calls(base_sdk, n), _calls(in_process, n), _calls(loopback, n)) for _ in range(repeat)
        ]
        assert not client.misses, client.misses[:1]
    return Size(
        n=n,
        floor=statistics.median(r[0] for r in rounds),
        inside=statistics.median(r[1] for r in rounds),
        loopback=statistics.median(r[2] for r in rounds),
        inside_ratio=statistics.median(r[1] / r[0] for r in rounds),
        loopback_ratio=statistics.median(r[2] / r[0] for r in rounds),
    )


def vcr_per_test(n: int, repeat: int) -> float | None:
    try:
        import vcr
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(prefix="cachelint-bench-vcr-") as tmp:
        cassettes = Path(tmp)
        with running(parse_script(dict(SCRIPT), source="<bench>")) as fake:
            sdk = openai.OpenAI(base_url=fake.url, api_key="x")
            for i in range(n):
                with vcr.use_cassette(str(cassettes / f"test_{i}.yaml"), record_mode="once"):
                    API.call(sdk, API.body(i))

        # Replayed with the fake gone: a cassette miss would raise, not call out.
        def replay() -> float:
            started = time.perf_counter()
            for i in range(n):
                with vcr.use_cassette(str(cassettes / f"test_{i}.yaml"), record_mode="none"):
                    API.call(sdk, API.body(i))
            return (time.perf_counter() - started) / n * 1000

        return _best(replay, repeat)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[200, 2000, 20000], help="ascending call counts"
    )
    parser.add_argument("--repeat", type=int, default=3, help="the median of this many passes")
    parser.add_argument("--vcr-calls", type=int, default=2000, help="calls replayed by vcrpy")
    parser.add_argument("--api", choices=sorted(APIS), default="chat", help="the API called")
    args = parser.parse_args()
    global API
    API = APIS[args.api]
    library = default_library()
    print(
        f"openai {openai.__version__} on {library}, {args.api} calls; ms/call, medians of "
        f"{args.repeat} paired passes (floor, in-process, loopback), ratios to the floor of the "
        "same pass"
    )
    measured: list[Size] = []
    for n in args.sizes:
        m = paired_size(n, args.repeat)
        measured.append(m)
        print(
            f"{n:>6} calls: floor {m.floor:.3f}  in-process {m.inside:.3f} "
            f"({m.inside_ratio:.2f}x)  loopback {m.loopback:.3f} ({m.loopback_ratio:.2f}x)"
        )
    if len(measured) > 1:
        small, large = measured[0], measured[-1]
        print(
            f"flatness {small.n:,} -> {large.n:,} calls: in-process {small.inside:.3f} -> "
            f"{large.inside:.3f} ms/call ({large.inside / small.inside:.2f}x), against the floor "
            f"{small.inside_ratio:.2f}x -> {large.inside_ratio:.2f}x; loopback "
            f"{small.loopback:.3f} -> {large.loopback:.3f} ms/call "
            f"({large.loopback / small.loopback:.2f}x)"
        )
    n = min(args.vcr_calls, max(args.sizes))
    vcr_ms = vcr_per_test(n, args.repeat)
    if vcr_ms is None:
        print("vcrpy: not installed (pip install vcrpy) - not compared")
    else:
        base = floor(n, args.repeat)
        print(f"{n:>6} calls: vcrpy per-test cassettes {vcr_ms:.3f} ({vcr_ms / base:.2f}x floor)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
