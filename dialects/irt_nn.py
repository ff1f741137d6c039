"""`irt` ops: Convolution and pooling: conv2d (stride, padding, dilation, groups, optional bias, fused
epilogue), batch_norm (eval), max_pool2d, avg_pool2d, adaptive_avg_pool2d.
"""

from __future__ import annotations

OPS: list = []
ATTRS: list = []
