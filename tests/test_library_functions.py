"""Functions of libraries irc does not import, converted by qualified name
(`irc.frontend.converters.function_converter`, `convert_core.LIBRARY_FUNCTIONS`): torchvision's
`stochastic_depth` and `drop_block2d`, torch.fx leaves (`torch.fx.wrap`) in EfficientNet, ConvNeXt,
Swin and MaxViT. Each was an eager node before, and EfficientNet-B0 ten native partitions.

torchvision is not a dependency: the functions below are its code, under its qualified names
(torchvision 0.28, `torchvision/ops/stochastic_depth.py` and `drop_block.py`), so that eager
PyTorch runs what torchvision runs. The real ones are tested too where torchvision is installed."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import irc


def stochastic_depth(input, p: float, mode: str, training: bool = True):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ["batch", "row"]:
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = torch.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


def drop_block2d(input, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06, training: bool = True):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}.")
    if input.ndim != 4:
        raise ValueError(f"input should be 4 dimensional. Got {input.ndim} dimensions.")
    if not training or p == 0.0:
        return input
    N, C, H, W = input.size()
    block_size = min(block_size, W, H)
    gamma = (p * H * W) / ((block_size**2) * ((H - block_size + 1) * (W - block_size + 1)))
    noise = torch.empty((N, C, H - block_size + 1, W - block_size + 1), dtype=input.dtype, device=input.device)
    noise.bernoulli_(gamma)
    noise = F.pad(noise, [block_size // 2] * 4, value=0)
    noise = F.max_pool2d(noise, stride=(1, 1), kernel_size=(block_size, block_size), padding=block_size // 2)
    noise = 1 - noise
    normalize_scale = noise.numel() / (eps + noise.sum())
    return input * noise * normalize_scale


stochastic_depth.__module__, stochastic_depth.__qualname__ = "torchvision.ops.stochastic_depth", "stochastic_depth"
drop_block2d.__module__, drop_block2d.__qualname__ = "torchvision.ops.drop_block", "drop_block2d"
torch.fx.wrap("stochastic_depth")  # as torchvision does: leaves for fx.symbolic_trace
torch.fx.wrap("drop_block2d")


def my_stochastic_depth(input, p: float, mode: str, training: bool = True):
    """The same name, another module: not torchvision's, so no converter."""
    return stochastic_depth(input, p, mode, training) * 1.0


torch.fx.wrap("my_stochastic_depth")


class Block(nn.Module):
    """EfficientNet's residual MBConv tail: x + stochastic_depth(conv(x)), and a DropBlock."""

    def __init__(self, p: float = 0.2, mode: str = "row", block_p: float = 0.1, mine: bool = False):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.p, self.mode, self.block_p, self.mine = p, mode, block_p, mine

    def forward(self, x):
        y = drop_block2d(torch.relu(self.bn(self.conv(x))), self.block_p, 3, training=self.training)
        if self.mine:
            return x + my_stochastic_depth(y, self.p, self.mode, self.training)
        return x + stochastic_depth(y, self.p, self.mode, self.training)


X = torch.randn(4, 8, 10, 10)


@pytest.mark.parametrize("mode", ["row", "batch"])
@pytest.mark.parametrize("p", [0.0, 0.2, 1.0])
def test_stochastic_depth_and_drop_block_in_eval_mode_are_native(p, mode):
    m = Block(p, mode).eval()
    cm = irc.compile(m, (X,), fallback=False)  # an UnsupportedOpError before
    with torch.no_grad():
        torch.testing.assert_close(cm(X), m(X))
    assert "stochastic_depth" not in cm.ir("import") and "drop_block" not in cm.ir("import")


def test_in_training_mode_they_draw_at_every_call_in_eager():
    m = Block(0.5, "row", 0.0).train()
    m.bn.eval()  # batch statistics are another story: this is about the drop
    with pytest.raises(irc.UnsupportedOpError, match="stochastic depth in training mode"):
        irc.compile(m, (X,), fallback=False)
    x = torch.randn(64, 8, 10, 10)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        a, b, ref = cm(x), cm(x), m.bn(m.conv(x)).relu()
        # every row is x or x + 2 * relu(bn(conv x)), drawn per call, as eager draws it
        for out in (a, b):
            kept = [torch.allclose(out[i], x[i] + 2 * ref[i], atol=1e-5) for i in range(64)]
            dropped = [torch.equal(out[i], x[i]) for i in range(64)]
            assert all(k != d for k, d in zip(kept, dropped)) and 0 < sum(kept) < 64
        assert not torch.equal(a, b)


def test_training_with_p_zero_is_native():
    m = Block(0.0, "row", 0.0).train()
    m.bn.eval()
    cm = irc.compile(m, (X,), fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(X), m(X))


def test_switching_to_train_mode_after_compiling_is_seen():
    m = Block(0.5, "batch", 0.0).eval()
    cm = irc.compile(m, (X,))
    with torch.no_grad():
        torch.testing.assert_close(cm(X), m(X))
        m.train()
        m.bn.eval()
        outs = {cm(X).sum().item() for _ in range(40)}  # the whole branch kept or dropped per call
    assert len(outs) == 2


def test_arguments_torch_refuses_raise_as_in_eager():
    """Not converted (the leaf runs in eager PyTorch), and eager raises: so does compiling."""
    for model, message in ((Block(0.2, "column"), "mode has to be either"), (Block(1.5), "drop probability")):
        with pytest.raises(ValueError, match=message):
            model.eval()(X)
        with pytest.raises(irc.IrcError, match=message):
            irc.compile(model, (X,))


def test_a_function_of_the_same_name_elsewhere_is_not_converted():
    m = Block(0.2, mine=True).eval()
    with pytest.raises(irc.UnsupportedOpError, match="my_stochastic_depth"):
        irc.compile(m, (X,), fallback=False)
    cm = irc.compile(m, (X,))  # an eager node, then
    with torch.no_grad():
        torch.testing.assert_close(cm(X), m(X))


@functools.wraps(stochastic_depth)
def noisy_depth(input, p: float, mode: str, training: bool = True):
    """A wrapper under torchvision's name (functools.wraps copies it) that does more."""
    return stochastic_depth(input, p, mode, training) + 1.0


torch.fx.wrap("noisy_depth")


def test_a_wrapper_that_copied_the_name_is_not_converted():
    class Wrapped(nn.Module):
        def forward(self, x):
            return noisy_depth(x * 2, 0.2, "row", False)

    m = Wrapped().eval()
    assert f"{noisy_depth.__module__}.{noisy_depth.__qualname__}" == "torchvision.ops.stochastic_depth.stochastic_depth"
    with pytest.raises(irc.UnsupportedOpError, match="no converter"):
        irc.compile(m, (X,), fallback=False)
    cm = irc.compile(m, (X,))  # the wrapper runs in eager PyTorch: + 1 included
    with torch.no_grad():
        torch.testing.assert_close(cm(X), m(X))


def test_torchvision_models_with_stochastic_depth_are_one_native_graph():
    tv = pytest.importorskip("torchvision")
    m = tv.models.efficientnet_b0(num_classes=10).eval()
    x = torch.randn(1, 3, 64, 64)
    cm = irc.compile(m, (x,), fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x), rtol=1e-4, atol=1e-4)
