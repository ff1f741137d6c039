"""The built-in real models through torch.compile(backend="irc"), against eager."""

from __future__ import annotations

import pytest
import torch

from irc.models import get_model


@pytest.mark.parametrize(
    "name", ["cnn", "resnet18", "mobilenet-v2", "densenet", "convnext", "transformer-encoder", "transformer-block"]
)
def test_builtin_model_through_dynamo(name):
    torch._dynamo.reset()
    model, inputs = get_model(name).build()
    compiled = torch.compile(model, backend="irc")
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs))
