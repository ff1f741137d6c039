"""Compile ResNet-18 (torchvision's layout, 1x3x224x224, eval mode) and check it against eager.

    python examples/resnet18.py
"""

import re
import time

import torch

import irc
from irc.models import get_model

model, (x,) = get_model("resnet18").build()
t0 = time.perf_counter()
cm = irc.compile(model, (x,))
t1 = time.perf_counter()
y = cm(x)
t2 = time.perf_counter()
with torch.no_grad():
    expected = model(x)
torch.testing.assert_close(y, expected)
kernels = re.findall(r"// kernel \d+: (.*)", cm.cpp_source)
print(f"resnet18: matches eager (max abs error {(y - expected).abs().max():.2e}); "
      f"compile {t1 - t0:.1f} s, one call {t2 - t1:.2f} s, {len(kernels)} kernels:")
for k in kernels:
    print("  ", k)
