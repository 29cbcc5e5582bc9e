"""``python -m benchmarks ...``: see benchmarks/side_by_side.py."""

from .side_by_side import main

raise SystemExit(main())
