"""Where the native libraries and the AOT kernels come from.

Order (first match wins; an explicit environment variable beats what was
bundled, so a developer can point an installed package at fresh builds):

  libraries  $DASH_LIB_DIR  ->  dash_attn/_lib (copied at wheel build time)
             ->  <repo>/build/lib
  kernels    $DASH_KERNEL_DIR  ->  dash_attn/kernels (package data)
             ->  <repo>/build/kernels

<repo> is the repository the wheel was built from (recorded in
_build_info.py) or, when running from a checkout (PYTHONPATH=python or an
editable install), the directory above python/.
"""

import os

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))

try:  # written by the build backend; absent in a source checkout
    from . import _build_info
except ImportError:  # pragma: no cover - depends on how the package is used
    _build_info = None


def repo_dirs():
    """Candidate repository roots, most specific first."""
    out = []
    src = getattr(_build_info, "SOURCE_DIR", None)
    if src:
        out.append(src)
    checkout = os.path.dirname(os.path.dirname(_PKG_DIR))  # python/dash_attn -> repo
    if os.path.isfile(os.path.join(checkout, "CMakeLists.txt")):
        out.append(checkout)
    seen, uniq = set(), []
    for d in out:
        d = os.path.abspath(d)
        if d not in seen:
            seen.add(d)
            uniq.append(d)
    return uniq


def find_library(name):
    """Absolute path of lib<name>.so; raises RuntimeError listing every place
    looked at."""
    fname = "lib%s.so" % name
    tried = []
    env = os.environ.get("DASH_LIB_DIR")
    if env:
        cands = [("$DASH_LIB_DIR", env)]
    else:
        cands = [("the installed package", os.path.join(_PKG_DIR, "_lib"))]
        cands += [("the repository build", os.path.join(r, "build", "lib"))
                  for r in repo_dirs()]
    for what, d in cands:
        path = os.path.join(d, fname)
        if os.path.isfile(path):
            return path
        tried.append("%s (%s)" % (path, what))
    hint = ("DASH_LIB_DIR=%s has no %s; build it with `ninja -C build dash_runtime "
            "dash_schedule_c`" % (env, fname)) if env else (
        "reinstall with `pip install ./python` (it builds the libraries with "
        "CMake) or set DASH_LIB_DIR to a directory holding %s" % fname)
    raise RuntimeError("dash_attn: cannot find %s; looked at: %s. %s"
                       % (fname, "; ".join(tried), hint))


def _has_manifests(d):
    try:
        return any(f.endswith(".json") for f in os.listdir(d))
    except OSError:
        return False


def kernel_dir_candidates():
    """(description, directory) in lookup order."""
    env = os.environ.get("DASH_KERNEL_DIR")
    if env:
        return [("$DASH_KERNEL_DIR", env)]
    cands = [("package data", os.path.join(_PKG_DIR, "kernels"))]
    cands += [("the repository build", os.path.join(r, "build", "kernels"))
              for r in repo_dirs()]
    return cands


def find_kernel_dir():
    """Directory holding the kernel manifests (*.json) and cubins."""
    cands = kernel_dir_candidates()
    for _, d in cands:
        if _has_manifests(d):
            return os.path.abspath(d)
    bundled = getattr(_build_info, "KERNELS_BUNDLED", None)
    why = []
    for what, d in cands:
        state = "missing" if not os.path.isdir(d) else "no *.json manifests"
        if what == "package data" and bundled == 0:
            state = "none were present when the package was built"
        why.append("%s [%s: %s]" % (d, what, state))
    raise RuntimeError(
        "dash_attn: no DASH kernels found; looked in %s. The cubins are built "
        "ahead of time by `scripts/aot --out build/kernels` on a machine with "
        "LLVM/MLIR 22: copy build/kernels here and set DASH_KERNEL_DIR to it, or "
        "reinstall with `pip install ./python` once build/kernels exists."
        % "; ".join(why))
