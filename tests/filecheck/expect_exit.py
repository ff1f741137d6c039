"""`%exit1 COMMAND ...` in a RUN line (lit.cfg): runs COMMAND with its output passed through and
succeeds only if it exits with code 1, irc-opt's code for an error in the input. lit's `not`
accepts any non-zero code, so it cannot tell that from 2 (a bad command line, an internal error)
or a crash. Imports nothing heavy: it adds a few milliseconds to the command it runs."""

import subprocess
import sys

expected, command = int(sys.argv[1]), sys.argv[2:]
code = subprocess.run(command).returncode
if code != expected:
    print(f"expect_exit.py: {command[0]} exited with code {code}, expected {expected}", file=sys.stderr)
sys.exit(0 if code == expected else 1)
