from __future__ import annotations

from cachelint.cli import main

raise SystemExit(main())
