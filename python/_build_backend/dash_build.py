"""In-tree PEP 517 build backend for dash-attention (standard library only).

Why not setuptools or scikit-build-core: pip builds in an isolated
environment and installs `build-system.requires` into it from a package
index. The GPU machine has no network, so any non-empty `requires` makes a
plain `pip install ./python` fail there. This backend needs nothing, so
`requires = []` and the install works offline.

What build_wheel does:
  1. native libraries: copies libdash_runtime.so and libdash_schedule_c.so
     from $DASH_LIB_DIR if set, else configures and builds just those two
     targets of the repository with CMake (-DDASH_ENABLE_COMPILER=OFF: no
     LLVM needed) in a temporary directory;
     $DASH_BUILD_NATIVE=0 skips them (the package then needs DASH_LIB_DIR
     at run time);
  2. kernels: copies every manifest (*.json) and the cubin it names from
     $DASH_KERNEL_DIR if set, else <repo>/build/kernels, into
     dash_attn/kernels (none found: a warning, and the package looks them up
     at run time, see dash_attn/_paths.py);
  3. writes dash_attn/_build_info.py and zips a platform wheel.
"""

import base64
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
_PKG = "dash_attn"
_LIBS = ("libdash_runtime.so", "libdash_schedule_c.so")


def _log(msg):
    sys.stderr.write("dash_build: %s\n" % msg)
    sys.stderr.flush()


def _project():
    path = os.path.join(_HERE, "pyproject.toml")
    with open(path, "rb") as f:
        data = f.read()
    try:
        import tomllib  # Python >= 3.11

        return tomllib.loads(data.decode("utf-8"))["project"]
    except ImportError:
        text = data.decode("utf-8")
        proj = {}
        for key in ("name", "version", "description", "requires-python"):
            m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), text, re.M)
            if m:
                proj[key] = m.group(1)
        return proj


def _repo_root():
    env = os.environ.get("DASH_SOURCE_DIR")
    cand = env or os.path.dirname(_HERE)
    if os.path.isfile(os.path.join(cand, "CMakeLists.txt")) and os.path.isdir(
        os.path.join(cand, "lib", "Runtime")
    ):
        return os.path.abspath(cand)
    if env:
        raise RuntimeError("DASH_SOURCE_DIR=%s is not the DASH repository" % env)
    return None


def _is_python_wrapper(path):
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _tools(name):
    """Executables called `name`, PATH first. pip's isolated build hides
    site-packages, so the console-script wrappers of the `cmake` / `ninja`
    PyPI packages (as in a venv's bin/) fail there with "No module named
    cmake"; for those, the real binary inside the package is used."""
    seen = []
    dirs = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/bin", "/usr/bin"]
    for d in dirs:
        p = os.path.join(d, name)
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            continue
        if _is_python_wrapper(p):
            root = os.path.dirname(os.path.dirname(os.path.realpath(p)))
            pattern = os.path.join(root, "lib", "python*", "site-packages", name, "data",
                                   "bin", name)
            cands = sorted(glob.glob(pattern))
        else:
            cands = [p]
        for c in cands:
            if c not in seen:
                seen.append(c)
    return seen


def _working_tool(name, env_var):
    explicit = os.environ.get(env_var)
    for exe in ([explicit] if explicit else _tools(name)):
        try:
            r = subprocess.run([exe, "--version"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        except OSError:
            continue
        if r.returncode == 0:
            return exe
    return None


def _build_native(repo, tmp):
    """Builds the two shared libraries with CMake; returns their directory."""
    cmake = _working_tool("cmake", "DASH_CMAKE")
    if not cmake:
        raise RuntimeError(
            "dash_build: no working cmake found (set DASH_CMAKE). Or build the "
            "libraries yourself (ninja -C build dash_runtime dash_schedule_c) and "
            "set DASH_LIB_DIR=build/lib")
    bdir = os.path.join(tmp, "cmake-build")
    cfg = [cmake, "-S", repo, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release",
           "-DDASH_ENABLE_COMPILER=OFF", "-DDASH_ENABLE_TESTS=OFF"]
    ninja = _working_tool("ninja", "DASH_NINJA")
    if ninja:
        cfg += ["-G", "Ninja", "-DCMAKE_MAKE_PROGRAM=" + ninja]
    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda:
        cfg.append("-DDASH_CUDA_ROOT=" + cuda)
    jobs = os.environ.get("DASH_BUILD_JOBS") or str(os.cpu_count() or 2)
    build = [cmake, "--build", bdir, "--target", "dash_runtime", "dash_schedule_c",
             "--parallel", jobs]
    for cmd in (cfg, build):
        _log(" ".join(cmd))
        # stdout to stderr: pip shows it with -v and on failure.
        r = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            raise RuntimeError(
                "dash_build: CMake failed (%s). The runtime needs a C++17 compiler "
                "and CUDA's cuda.h (header only; set CUDA_HOME). Or build the "
                "libraries yourself and set DASH_LIB_DIR." % " ".join(cmd[:2]))
    return os.path.join(bdir, "lib")


def _collect_libs(repo, tmp):
    if os.environ.get("DASH_BUILD_NATIVE", "1") == "0":
        _log("DASH_BUILD_NATIVE=0: no native libraries in the wheel "
             "(set DASH_LIB_DIR at run time)")
        return {}
    src = os.environ.get("DASH_LIB_DIR")
    if src:
        _log("native libraries from DASH_LIB_DIR=%s" % src)
    else:
        if repo is None:
            raise RuntimeError(
                "dash_build: not inside the DASH repository and DASH_LIB_DIR is "
                "unset; set DASH_SOURCE_DIR or DASH_LIB_DIR")
        src = _build_native(repo, tmp)
    out = {}
    for name in _LIBS:
        path = os.path.join(src, name)
        if not os.path.isfile(path):
            raise RuntimeError("dash_build: %s not found in %s" % (name, src))
        out["%s/_lib/%s" % (_PKG, name)] = path
    return out


def _collect_kernels(repo):
    src = os.environ.get("DASH_KERNEL_DIR")
    if not src and repo:
        src = os.path.join(repo, "build", "kernels")
    out = {}
    if not src or not os.path.isdir(src):
        _log("WARNING: no kernel directory (%s); the wheel has no kernels and "
             "dash_attn will look in $DASH_KERNEL_DIR or <repo>/build/kernels "
             "at run time" % (src or "DASH_KERNEL_DIR unset"))
        return out, None
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(src, name)
        with open(path, "r", encoding="utf-8") as f:
            cubin = json.load(f).get("cubin", "")
        cubin_path = cubin if os.path.isabs(cubin) else os.path.join(src, cubin)
        if not cubin or not os.path.isfile(cubin_path):
            raise RuntimeError("dash_build: %s names cubin %r which does not exist"
                               % (path, cubin))
        if os.path.isabs(cubin):
            raise RuntimeError("dash_build: %s: absolute cubin path cannot be "
                               "packaged" % path)
        out["%s/kernels/%s" % (_PKG, name)] = path
        out["%s/kernels/%s" % (_PKG, cubin)] = cubin_path
    n = sum(1 for k in out if k.endswith(".json"))
    _log("%d kernel manifests from %s" % (n, src))
    if n == 0:
        _log("WARNING: %s has no manifests; run scripts/aot on the compiler "
             "machine" % src)
    return out, os.path.abspath(src)


def _build_info(repo, libs, kernels, kernel_src):
    n = sum(1 for k in kernels if k.endswith(".json"))
    return (
        "# Generated by _build_backend/dash_build.py at wheel build time.\n"
        "SOURCE_DIR = %r\nLIBS_BUNDLED = %r\nKERNELS_BUNDLED = %d\n"
        "KERNEL_SOURCE = %r\n" % (repo, bool(libs), n, kernel_src)
    )


def _dist_info_name(proj):
    name = re.sub(r"[-_.]+", "_", proj["name"])
    return name, "%s-%s.dist-info" % (name, proj["version"])


def _metadata(proj):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % proj["name"],
        "Version: %s" % proj["version"],
    ]
    if proj.get("description"):
        lines.append("Summary: %s" % proj["description"])
    if proj.get("requires-python"):
        lines.append("Requires-Python: %s" % proj["requires-python"])
    for extra, reqs in sorted((proj.get("optional-dependencies") or {}).items()):
        lines.append("Provides-Extra: %s" % extra)
        for r in reqs:
            lines.append('Requires-Dist: %s; extra == "%s"' % (r, extra))
    for r in proj.get("dependencies") or []:
        lines.append("Requires-Dist: %s" % r)
    body = ""
    readme = os.path.join(_HERE, "README.md")
    if os.path.isfile(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, "r", encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _platform_tag():
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


class _Wheel:
    """Zip writer that records RECORD entries (fixed timestamps: reproducible)."""

    def __init__(self, path):
        self.zf = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, arcname, data, executable=False):
        info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o755 if executable else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zf.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self.records.append("%s,sha256=%s,%d" % (arcname, digest.decode(), len(data)))

    def add_file(self, arcname, path, executable=False):
        with open(path, "rb") as f:
            self.add(arcname, f.read(), executable)

    def close(self, record_name):
        self.records.append("%s,," % record_name)
        info = zipfile.ZipInfo(record_name, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        self.zf.writestr(info, "\n".join(self.records) + "\n")
        self.zf.close()


def _write_dist_info(whl, proj, tag, extra_files=()):
    _, dist_info = _dist_info_name(proj)
    whl.add(dist_info + "/METADATA", _metadata(proj).encode("utf-8"))
    whl.add(dist_info + "/WHEEL", (
        "Wheel-Version: 1.0\nGenerator: dash_build\nRoot-Is-Purelib: false\n"
        "Tag: %s\n" % tag).encode())
    whl.add(dist_info + "/top_level.txt", (_PKG + "\n").encode())
    return dist_info + "/RECORD"


# --------------------------------------------------------------------------
# PEP 517 / PEP 660 hooks
# --------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    # Without this hook pip calls build_wheel twice (once for the metadata),
    # which would run the CMake build twice.
    proj = _project()
    _, dist_info = _dist_info_name(proj)
    d = os.path.join(metadata_directory, dist_info)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(proj))
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write("Wheel-Version: 1.0\nGenerator: dash_build\nRoot-Is-Purelib: false\n"
                "Tag: py3-none-%s\n" % _platform_tag())
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    proj = _project()
    repo = _repo_root()
    tag = "py3-none-" + _platform_tag()
    name, _ = _dist_info_name(proj)
    fname = "%s-%s-%s.whl" % (name, proj["version"], tag)
    tmp = tempfile.mkdtemp(prefix="dash_build_")
    try:
        libs = _collect_libs(repo, tmp)
        kernels, kernel_src = _collect_kernels(repo)
        whl = _Wheel(os.path.join(wheel_directory, fname))
        pkg_dir = os.path.join(_HERE, _PKG)
        for root, dirs, files in os.walk(pkg_dir):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "_lib", "kernels"))
            for f in sorted(files):
                if f.endswith(".py") and f != "_build_info.py" or f == "py.typed":
                    rel = os.path.relpath(os.path.join(root, f), _HERE)
                    whl.add_file(rel.replace(os.sep, "/"), os.path.join(root, f))
        whl.add("%s/_build_info.py" % _PKG,
                _build_info(repo, libs, kernels, kernel_src).encode())
        for arc, path in sorted(libs.items()):
            whl.add_file(arc, path, executable=True)
        for arc, path in sorted(kernels.items()):
            whl.add_file(arc, path)
        whl.close(_write_dist_info(whl, proj, tag))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return fname


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """`pip install -e ./python`: a .pth pointing at python/. Native libraries
    and kernels are then found through DASH_LIB_DIR / DASH_KERNEL_DIR or the
    repository's build/lib and build/kernels (dash_attn/_paths.py)."""
    proj = _project()
    tag = "py3-none-any"
    name, _ = _dist_info_name(proj)
    fname = "%s-%s-%s.whl" % (name, proj["version"], tag)
    whl = _Wheel(os.path.join(wheel_directory, fname))
    whl.add("__editable__.%s.pth" % name, (_HERE + "\n").encode())
    whl.close(_write_dist_info(whl, proj, tag))
    return fname
