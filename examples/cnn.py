"""Compile the built-in `cnn` model (conv-bn-relu blocks on 1x3x32x32) and check it against eager.

    python examples/cnn.py
"""

import re

import torch

import irc
from irc.models import get_model

model, (x,) = get_model("cnn").build()
cm = irc.compile(model, (x,))
with torch.no_grad():
    expected = model(x)
torch.testing.assert_close(cm(x), expected)
print(f"cnn: matches eager (max abs error {(cm(x) - expected).abs().max():.2e})")
print("kernels (each batch norm folded into its conv, the ReLU in the conv's epilogue):")
for k in re.findall(r"// kernel \d+: (.*)", cm.cpp_source):
    print("  ", k)
