"""irc: a multi-level IR compiler for running PyTorch models on CPUs, built on xDSL.

    cm = irc.compile(model, example_inputs)
    y = cm(x)                      # one native call
    print(cm.ir("fused"))          # the IR after fusion; also "import", "loops"; cm.cpp_source
"""

from irc.api import CompiledModule, compile
from irc.errors import CompileError, InputError, IrcError, UnsupportedOpError

__version__ = "0.1.0"

__all__ = ["CompileError", "CompiledModule", "InputError", "IrcError", "UnsupportedOpError", "compile"]
