"""Built-in models through torch.compile(backend="irc") with grad enabled: inference without
torch.no_grad(), and training steps.

    python examples/grad_enabled.py [--models a,b] [--threads 1] [--rounds 7] [--train]

Without --train, each model (eval mode, parameters requiring grad, as users build them) is
called without torch.no_grad(): irc runs its inference graph until a backward pass goes through
it (see "torch.compile" in the README). Times, interleaved round-robin, the medians of
`--rounds` rounds of calls:
  eager        the model in PyTorch, grad enabled (autograd records the call)
  irc          torch.compile(model, backend="irc"), grad enabled
  irc no_grad  the same compiled model under torch.no_grad(), for scale

With --train (training mode, dropout probabilities set to 0: compiled dropout draws other masks
than eager's), a step is forward, `out.square().mean().backward()` and an SGD step; eager and
irc train copies of the same model, and their outputs are compared at the first three steps
(within 1e-3: fp32 summation order, carried through the steps).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from irc.models import BUILTIN_MODELS, get_model


def _round_ms(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e3


def _calls_per_round(fn) -> int:
    """Enough calls for about 50 ms a round."""
    start = time.perf_counter()
    fn()
    return max(1, min(200, int(0.05 / max(time.perf_counter() - start, 1e-6))))


def inference(name: str, rounds: int) -> dict[str, float]:
    model, inputs = get_model(name).build()
    compiled = torch.compile(model, backend="irc")
    out = compiled(*inputs)
    assert out.grad_fn is not None, "autograd did not record the call"
    with torch.no_grad():
        torch.testing.assert_close(out.detach(), model(*inputs), rtol=1e-4, atol=1e-4)

    def no_grad():
        with torch.no_grad():
            compiled(*inputs)

    runs = {"eager": lambda: model(*inputs), "irc": lambda: compiled(*inputs), "irc no_grad": no_grad}
    return _interleaved(runs, rounds)


def training(name: str, rounds: int) -> dict[str, float]:
    model, inputs = get_model(name).build()
    model.train()
    for m in model.modules():  # compiled dropout draws other masks than eager's: none, to compare
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        elif isinstance(m, torch.nn.MultiheadAttention):
            m.dropout = 0.0
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="irc")
    opts = {m: torch.optim.SGD(m.parameters(), lr=1e-4) for m in (model, ref)}
    last: dict[str, torch.Tensor] = {}

    def step(run, owner, key):
        out = run(*inputs)
        out.square().mean().backward()
        opts[owner].step()
        opts[owner].zero_grad()
        last[key] = out.detach()

    runs = {"eager": lambda: step(ref, ref, "eager"), "irc": lambda: step(compiled, model, "irc")}
    for _ in range(3):  # compiles (the training graphs after the first backward), and checks
        for run in runs.values():
            run()
        torch.testing.assert_close(last["irc"], last["eager"], rtol=1e-3, atol=1e-3)
    return _interleaved(runs, rounds)


def _interleaved(runs: dict, rounds: int) -> dict[str, float]:
    for run in runs.values():  # warm: compile, first calls
        run()
        run()
    calls = {k: _calls_per_round(run) for k, run in runs.items()}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for k, run in runs.items():
            times[k].append(_round_ms(run, calls[k]))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(BUILTIN_MODELS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--train", action="store_true", help="time training steps instead of calls")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    measure = training if args.train else inference
    what = "training step" if args.train else "call with grad enabled"
    print(f"{what}, {args.threads} thread(s), medians of {args.rounds} interleaved rounds (ms)")
    for name in args.models.split(","):
        t = measure(name, args.rounds)
        extra = f"  irc no_grad {t['irc no_grad']:9.3f}" if "irc no_grad" in t else ""
        print(f"{name:22s} eager {t['eager']:9.3f}  irc {t['irc']:9.3f}  irc/eager {t['irc'] / t['eager']:5.2f}{extra}",
              flush=True)


if __name__ == "__main__":
    main()
