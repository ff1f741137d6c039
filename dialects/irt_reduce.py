"""`irt` ops: Reductions and normalizations: sum, mean, amax over dims; softmax, log_softmax, layer_norm;
batched matmul and attention.
"""

from __future__ import annotations

OPS: list = []
ATTRS: list = []
