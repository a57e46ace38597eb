"""The bench/ scripts as modules, for the tests that check them without a GPU."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def path(name):
    return os.path.join(ROOT, "bench", name + ".py")


def load(name):
    spec = importlib.util.spec_from_file_location(name, path(name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
