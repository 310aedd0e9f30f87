"""The replay runner behind `cachelint run`.

The pure core (datasets, canonical requests, outputs, assertions, judges) does no network or cache
I/O and imports only the standard library and the foundation. The client (cache lookups and
recording), the transport (httpx, imported lazily) and the engine wire it to the store; the cache
endpoint serves it to SDK code over OpenAI's chat-completions API and the other providers' APIs.
`providers/` holds what is known of each provider's API, one module each (listed in its
`__init__`), with the live transport that calls them and AWS's signing and event framing;
`assertions/` holds the assertion types (their registry is its `__init__`) and the evaluation of a
scenario's assertions. The fake provider (`cachelint.devtools`) serves the same APIs on 127.0.0.1
for recording examples and for tests.
"""
