"""The tests import the package from this source tree (python/), unless
BANYAN_TEST_INSTALLED is set (then the installed one)."""
import os
import sys

if not os.environ.get("BANYAN_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
