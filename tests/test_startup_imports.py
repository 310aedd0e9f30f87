"""What a replay's start-up imports: only what it uses (each module costs every `cachelint run`)."""

from __future__ import annotations

import subprocess
import sys


def test_run_and_git_helpers_load_no_thread_pool() -> None:
    # concurrent.futures (~5 ms) serves `check`'s git queue only; a replay never builds one.
    probe = "import sys, cachelint.runner.pipeline, cachelint.gitutil; print(sorted(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "'concurrent.futures'" not in loaded
