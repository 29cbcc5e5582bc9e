"""New nodes and constants for an ONNX graph, each made once: what the backbone rewrites build with.

``precision.rebuild`` (the weight products in another precision, its ``Rewrite``) and
``attention.rewrite_attention`` (the attention in ONNX's own operators) both add nodes and constants this way.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np


class GraphBuilder:
    """New nodes and constants for one graph; ``constants`` maps name -> array, or with ``keep`` each
    constant goes there once, as it is made (``rebuild``'s ``store``), and ``constants`` stays empty."""

    def __init__(self, keep: Optional[Callable[[str, np.ndarray], None]] = None):
        self.nodes: list = []
        self.constants: dict[str, np.ndarray] = {}
        self._keep = keep
        self._kept: set[str] = set()
        self._made: set[str] = set()

    def constant(self, name: str, value: np.ndarray) -> str:
        if self._keep is None:
            self.constants[name] = value
        elif name not in self._kept:  # asked for again (an activation's mask or shape): the same value
            self._kept.add(name)
            self._keep(name, value)
        return name

    def node(self, op: str, inputs: Sequence[str], outputs: Sequence[str], name: str, domain: str = "", **attrs):
        import onnx

        self.nodes.append(onnx.helper.make_node(op, list(inputs), list(outputs), name=name, domain=domain or None,
                                                **attrs))
        return outputs[0]

    def once(self, op: str, inputs: Sequence[str], name: str, **attrs) -> str:
        """The node ``name`` (its one output named alike), made the first time it is asked for: an
        activation read by several products is reshaped, masked or measured once."""
        if name not in self._made:
            self.node(op, inputs, [name], name, **attrs)
            self._made.add(name)
        return name
