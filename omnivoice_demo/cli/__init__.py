"""The ``omnivoice`` command: ``main`` (synth, serve, wyoming, batch, eval, models) and ``library``
(``omnivoice voices ...`` and ``omnivoice languages``).  A front end, like ``ui``, ``api`` and ``wyoming``."""
