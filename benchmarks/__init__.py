"""Benchmarks run from a checkout (not installed): ``python -m benchmarks`` times the engine side by side
with the PyTorch reference (side_by_side.py)."""
