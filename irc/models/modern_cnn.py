"""Built-in CNNs in the style of later architectures, written out here (torchvision is not a
dependency), small enough that `irc verify` stays quick:

* `mobilenet-v2`: MobileNet-v2's inverted residual blocks (1x1 expand conv-BN-ReLU6, 3x3
  depthwise conv-BN-ReLU6 at stride 1 or 2, 1x1 project conv-BN, a residual add when the
  shape allows), a stem, a 1x1 head conv, average pool and Linear; 1x3x112x112;
* `densenet`: DenseNet's dense blocks (BN-ReLU-conv1x1-BN-ReLU-conv3x3 layers, each
  concatenating its 32 new channels to its input) and a transition (BN-ReLU-conv1x1-avg pool);
  1x3x64x64;
* `convnext`: ConvNeXt's blocks (7x7 depthwise conv, LayerNorm over channels after a
  channels-last permute, Linear 4x expand, GELU, Linear, layer scale, residual), a patchify
  stem and a downsampling layer; 1x3x112x112.

Batch-norm statistics and affine parameters, and ConvNeXt's layer scales, are randomized
(seeded: `ModelSpec.build` sets the torch seed), so folds and scales are exercised with non-trivial values.
The models are returned in eval mode.
"""

from __future__ import annotations

import torch
from torch import nn

from irc.models.cnn import randomize_batch_norms
from irc.models.spec import Inputs, ModelSpec

# --- MobileNet-v2 -----------------------------------------------------------------------------


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, relu6: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([nn.ReLU6(inplace=True)] if relu6 else []))


class InvertedResidual(nn.Module):
    """MobileNet-v2's block: expand (1x1), depthwise 3x3 (stride 1 or 2), project (1x1, linear)."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, relu6=False)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNet-v2's first stages (expansion, channels, repeats, stride), then its head."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 2, 2))

    def __init__(self, num_classes: int = 10, head: int = 320):
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, 32, 3, stride=2)]
        cin = 32
        for expand, cout, repeats, stride in self.SETTINGS:
            for i in range(repeats):
                layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
                cin = cout
        layers.append(conv_bn(cin, head, 1))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(head, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


# --- DenseNet ---------------------------------------------------------------------------------


class DenseLayer(nn.Module):
    """BN-ReLU-conv1x1 (to bn_size * growth) - BN-ReLU-conv3x3 (to growth), concatenated to the input."""

    def __init__(self, cin: int, growth: int, bn_size: int = 4):
        super().__init__()
        self.norm1, self.relu1 = nn.BatchNorm2d(cin), nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2, self.relu2 = nn.BatchNorm2d(bn_size * growth), nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        new = self.conv2(self.relu2(self.norm2(self.conv1(self.relu1(self.norm1(x))))))
        return torch.cat([x, new], 1)


def transition(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, cout, 1, bias=False),
                         nn.AvgPool2d(2, stride=2))


class DenseNet(nn.Module):
    """DenseNet-121's stem (at a quarter of the input), two dense blocks around a transition."""

    def __init__(self, num_classes: int = 10, growth: int = 32, layers: tuple[int, int] = (4, 4)):
        super().__init__()
        c = 2 * growth
        mods: list[nn.Module] = [nn.Conv2d(3, c, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(c),
                                 nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1)]
        for b, count in enumerate(layers):
            for _ in range(count):
                mods.append(DenseLayer(c, growth))
                c += growth
            if b != len(layers) - 1:
                mods.append(transition(c, c // 2))
                c //= 2
        mods += [nn.BatchNorm2d(c), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(*mods)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


# --- ConvNeXt ---------------------------------------------------------------------------------


class ChannelsLayerNorm(nn.Module):
    """LayerNorm over the channels of an NCHW tensor, through a channels-last permute."""

    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """dwconv 7x7 -> permute to NHWC -> LayerNorm -> Linear 4x -> GELU -> Linear -> layer scale
    -> permute back -> residual add (ConvNeXt's block, no stochastic depth at inference)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.empty(dim).uniform_(0.5, 1.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.gamma * self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    """A patchify stem (4x4, stride 4) + LayerNorm, two stages of ConvNeXt blocks with a
    LayerNorm + 2x2 stride-2 conv between them, global average pool, LayerNorm, Linear."""

    def __init__(self, num_classes: int = 10, dims: tuple[int, int] = (64, 128), depths: tuple[int, int] = (2, 2)):
        super().__init__()
        mods: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, stride=4), ChannelsLayerNorm(dims[0])]
        for i, (dim, depth) in enumerate(zip(dims, depths)):
            if i:
                mods += [ChannelsLayerNorm(dims[i - 1]), nn.Conv2d(dims[i - 1], dim, 2, stride=2)]
            mods += [ConvNeXtBlock(dim) for _ in range(depth)]
        self.features = nn.Sequential(*mods)
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.features(x).mean((-2, -1))))


def _mobilenet_v2() -> tuple[nn.Module, Inputs]:
    return randomize_batch_norms(MobileNetV2()).eval(), (torch.randn(1, 3, 112, 112),)


def _densenet() -> tuple[nn.Module, Inputs]:
    return randomize_batch_norms(DenseNet()).eval(), (torch.randn(1, 3, 64, 64),)


def _convnext() -> tuple[nn.Module, Inputs]:
    return ConvNeXt().eval(), (torch.randn(1, 3, 112, 112),)


SPECS = (
    ModelSpec("mobilenet-v2", "MobileNet-v2 inverted residuals (expand, 3x3 depthwise s1/s2, project, skip), "
              "1x3x112x112", _mobilenet_v2),
    ModelSpec("densenet", "DenseNet: 2 dense blocks of 4 BN-ReLU-conv1x1-BN-ReLU-conv3x3 layers, growth 32, "
              "a transition, 1x3x64x64", _densenet),
    ModelSpec("convnext", "ConvNeXt: patchify stem, 2x2 blocks (7x7 depthwise, LayerNorm, Linear 4x, GELU, "
              "layer scale, skip), 1x3x112x112", _convnext),
)
