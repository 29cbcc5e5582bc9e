"""Which backbone graph a folder runs and how it was made: the causal-attention repair (``repair``), the
weight products rebuilt in other precisions (``precision``, ``dequantize``), the fidelity gate and its
published table (``fidelity``), and ``auto``'s measured choice (``choice``), remembered per machine (``remembered``) and watched
after it is made (``watch``)."""
