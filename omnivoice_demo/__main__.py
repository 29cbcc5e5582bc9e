"""``python -m omnivoice_demo``: the ``omnivoice`` command (``cli.main``)."""

from .cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
