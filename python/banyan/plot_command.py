"""`python3 -m banyan.plot_command ARGS`: what `banyan plot ARGS` runs
(banyan.plot.main; a module of its own, so that running it does not
import banyan.plot twice)."""
import sys

from .plot import main

sys.exit(main())
