"""`python3 -m banyan.plot_command ARGS`: the same as `banyan plot ARGS`
(banyan.plot.main, which the CLI imports itself; a module of its own, so
that running it does not import banyan.plot twice)."""
import sys

from .plot import main

sys.exit(main())
