"""Helpers shared by the numerics tests."""

from __future__ import annotations

import torch

import irc


def check(model, *inputs, fuse=True, **tol):
    """Compile natively (no eager fallback), run, compare with eager at float32 tolerances
    unless `tol` says otherwise; returns the compiled module."""
    cm = irc.compile(model, inputs, fuse=fuse, fallback=False)
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(cm(*inputs), expected, **tol)
    return cm


def kernel_code(cm) -> str:
    """The generated entry point's body: the C++ after the prelude (math, GEMM engine)."""
    return cm.cpp_source.split('extern "C" void forward(', 1)[1]
