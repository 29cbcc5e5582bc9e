"""Helpers shared by the tests (not tests themselves): synthetic signals, a local hub server,
the app in a subprocess, and the headless browser."""
