"""The wheel the in-tree backend builds: contents, RECORD, an offline
`pip wheel --no-index` (what the GPU machine, which has no network, does on
`pip install ./python`) and the installed package finding its bundled
libraries and kernels."""

import base64
import csv
import hashlib
import io
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import PY_ROOT

pytestmark = pytest.mark.usefixtures("native_libs")


def _env(kernel_dir):
    from dash_attn import _paths
    env = dict(os.environ)
    env["DASH_LIB_DIR"] = os.path.dirname(_paths.find_library("dash_runtime"))
    env["DASH_KERNEL_DIR"] = kernel_dir
    return env


def _build(tmp_path, kernel_dir):
    code = ("import sys; sys.path.insert(0, %r); import dash_build; "
            "print(dash_build.build_wheel(%r))" % (os.path.join(PY_ROOT, "_build_backend"),
                                                   str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", code], env=_env(kernel_dir), cwd=PY_ROOT,
                       capture_output=True, text=True, check=True)
    return os.path.join(str(tmp_path), r.stdout.strip().splitlines()[-1])


def test_wheel_contents_and_record(tmp_path, kernel_dir):
    whl = _build(tmp_path, kernel_dir)
    assert os.path.basename(whl).startswith("dash_attention-0.1.0-py3-none-")
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        for f in ("dash_attn/__init__.py", "dash_attn/_torch.py", "dash_attn/_build_info.py",
                  "dash_attn/_lib/libdash_runtime.so", "dash_attn/_lib/libdash_schedule_c.so",
                  "dash_attn/kernels/d64_full_ascending_det.json",
                  "dash_attn/kernels/d64_full_ascending_det.cubin",
                  "dash_attention-0.1.0.dist-info/METADATA",
                  "dash_attention-0.1.0.dist-info/WHEEL",
                  "dash_attention-0.1.0.dist-info/RECORD"):
            assert f in names, f
        assert not any("__pycache__" in n or n.startswith("tests/") for n in names)
        meta = z.read("dash_attention-0.1.0.dist-info/METADATA").decode()
        assert "Name: dash-attention" in meta and "Requires-Dist: torch" not in meta
        rows = list(csv.reader(io.StringIO(z.read("dash_attention-0.1.0.dist-info/RECORD").decode())))
        assert {r[0] for r in rows} == names
        for path, digest, size in rows:
            if not digest:
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == "sha256=" + want and int(size) == len(data)


def test_installed_wheel_uses_bundled_libs_and_kernels(tmp_path, kernel_dir):
    whl = _build(tmp_path, kernel_dir)
    site = tmp_path / "site"
    with zipfile.ZipFile(whl) as z:
        z.extractall(str(site))
    env = {k: v for k, v in os.environ.items()
           if k not in ("DASH_LIB_DIR", "DASH_KERNEL_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    code = ("import dash_attn, dash_attn._paths as p; "
            "print(p.find_library('dash_runtime')); print(dash_attn.kernel_dir()); "
            "print(len(dash_attn.available_kernels())); "
            "print(dash_attn.schedule_report(seqlen=1024).auto)")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == str(site / "dash_attn" / "_lib" / "libdash_runtime.so")
    assert out[1] == str(site / "dash_attn" / "kernels")
    assert out[2] == "14"


def test_pip_wheel_offline(tmp_path, kernel_dir):
    """requires = [] and an in-tree backend: pip needs no index to build."""
    try:
        import pip  # noqa: F401
    except ImportError:
        pytest.skip("pip is not installed")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps",
                        "--disable-pip-version-check", "-q", "-w", str(tmp_path), PY_ROOT],
                       env=_env(kernel_dir), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(f.startswith("dash_attention-0.1.0-") and f.endswith(".whl")
               for f in os.listdir(str(tmp_path)))
