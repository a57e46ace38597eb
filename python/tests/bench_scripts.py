"""The bench/ (and scripts/) Python modules, for the tests that check them without a GPU."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def path(name, directory="bench"):
    return os.path.join(ROOT, directory, name + ".py")


def load(name, directory="bench"):
    spec = importlib.util.spec_from_file_location(name, path(name, directory))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
