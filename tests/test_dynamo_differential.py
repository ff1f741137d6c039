"""Differential test: Dynamo-captured graphs of real architectures, irc against eager.

Each block of tests/dynamo_architectures.py runs through torch.compile(backend="irc") and
must match eager PyTorch at float32 tolerance (assert_close's defaults). Whatever irc cannot
compile runs eagerly between native partitions; it must never silently differ.
"""

from __future__ import annotations

import logging

import pytest
import torch
from dynamo_architectures import (
    BasicBlock,
    ConvNeXtBlock,
    DenseBlock,
    InvertedResidual,
    LlamaBlock,
    SequenceMixer,
    TinySwin,
    ViTBlock,
)


def _randomize_bn(model: torch.nn.Module) -> torch.nn.Module:
    """Non-trivial running statistics and affine parameters, so BatchNorm matters."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return model.eval()


CASES = {
    "swin": (TinySwin, (2, 3, 10, 10)),
    "vit": (ViTBlock, (2, 3, 8, 8)),
    "convnext": (ConvNeXtBlock, (2, 8, 6, 6)),
    "mobilenet": (InvertedResidual, (2, 8, 6, 6)),
    "resnet": (BasicBlock, (2, 4, 6, 6)),
    "densenet": (DenseBlock, (2, 4, 6, 6)),
    "sequence": (SequenceMixer, (3, 6, 8)),
    "llama": (LlamaBlock, (2, 6, 16)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_architecture_through_torch_compile(name, caplog):
    """Matches eager; and every native partition compiles (Swin's eager nodes, roll-free now but
    still table[index], once made the partitioner pull the unsupported getitem, or the index
    buffer only it reads, into a partition, which then ran eagerly as a whole)."""
    build, shape = CASES[name]
    torch.manual_seed(0)
    model = _randomize_bn(build())
    x = torch.randn(shape)
    torch._dynamo.reset()
    try:
        with torch.no_grad(), caplog.at_level(logging.INFO, logger="irc"):
            want = model(x)
            got = torch.compile(model, backend="irc")(x)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(got, want)
    assert "compiling them failed" not in caplog.text
