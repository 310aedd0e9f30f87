"""Where a recording reads its target's API key: the environment, else the target's env-file.

`cachelint check`'s secret rule reads it too (the configured key's value is one more secret to
look for), so this module stays off the transport: a pre-commit hook's check does not import the
HTTP machinery to learn one key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from cachelint.errors import CachelintError

if TYPE_CHECKING:
    from cachelint.config import Config

ENV_FILE_BYTES = 1024 * 1024  # a file of KEY=value lines; a larger one is no env-file


def configured_keys(config: Config) -> tuple[str, ...]:
    """The values of every target's API key (its api-key-env, else its env-file), for output
    to mask whatever their shape (`reporters.masked`); a key that cannot be read is none here
    (eval-cache-env-file reports an unreadable env-file)."""
    found: list[str] = []
    for target in (config.target, *config.targets.values()):
        if not target.api_key_env:
            continue
        try:
            key = load_api_key(config.repo, target.api_key_env, target.env_file)
        except CachelintError:
            continue
        if key and key not in found:
            found.append(key)
    return tuple(found)


def load_api_key(repo: Path, env_var: str, env_file: str | None) -> str | None:
    """The API key from the environment, else from `env_file` (relative to `repo`); never sets env.

    python-dotenv's `dotenv_values` reads the file without touching os.environ, so a key loaded
    for one target never leaks into subprocesses or other targets.
    """
    value = os.environ.get(env_var, "").strip()
    if value:
        return value
    if not env_file:
        return None
    from cachelint.confine import read_inside  # inside the repository, no link, bounded

    try:
        data = read_inside(repo, env_file, "env-file", ENV_FILE_BYTES, credential=True)
        text = data.decode("utf-8-sig")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CachelintError(f"{env_file}: cannot read env-file: {exc}") from None
    # Only for a file that is there: python-dotenv loads logging (~5 ms), and a replay in CI
    # masks the keys of an env-file that is usually not.
    import io

    from dotenv import dotenv_values

    found = dotenv_values(stream=io.StringIO(text)).get(env_var)
    return (found.strip() or None) if found else None
