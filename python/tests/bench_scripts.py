"""The bench/ (and scripts/) Python modules, for the tests that check them without a GPU."""

import importlib.machinery
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def path(name, directory="bench"):
    """<directory>/<name>.py, or <directory>/<name> for an executable script
    without the extension (scripts/aot)."""
    p = os.path.join(ROOT, directory, name)
    return p if os.path.isfile(p) else p + ".py"


def load(name, directory="bench"):
    p = path(name, directory)
    loader = importlib.machinery.SourceFileLoader(name, p)
    spec = importlib.util.spec_from_file_location(name, p, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
