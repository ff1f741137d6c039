"""Runtime: build generated C++ into cached shared libraries and call them from Python."""

from irc.runtime.build import (
    DEFAULT_CXXFLAGS,
    build_library,
    cache_dir,
    compiler_invocations,
    default_flags,
    libraries_loaded,
    load_library,
)
from irc.runtime.wrapper import TensorSpec, make_forward

__all__ = [
    "DEFAULT_CXXFLAGS",
    "TensorSpec",
    "build_library",
    "cache_dir",
    "compiler_invocations",
    "default_flags",
    "libraries_loaded",
    "load_library",
    "make_forward",
]
