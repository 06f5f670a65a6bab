"""setuptools' build with the C library copied into the package: `pip
install ./python` after `make` gives a package that finds its own
libbanyan.so ($BANYAN_LIB at install time names another build's)."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def library():
    env = os.environ.get("BANYAN_LIB")
    if env:
        return env
    for build in ("build", "build-cuda"):
        path = os.path.join(HERE, "..", build, "libbanyan.so")
        if os.path.exists(path):
            return path
    return None


class with_library(build_py):
    def run(self):
        super().run()
        lib = library()
        if lib:
            shutil.copy(lib, os.path.join(self.build_lib, "banyan", "libbanyan.so"))
        else:
            print("banyan: no libbanyan.so built (run `make` first, or set BANYAN_LIB); the package will look for "
                  "one at import")


setup(cmdclass={"build_py": with_library})
