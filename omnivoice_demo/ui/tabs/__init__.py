"""One module per tab of the app: its handlers (plain functions of a ``Studio``), its widgets and events
(``build``), and its named API endpoints (``build_api``)."""
