"""scripts/fetch-ptxas refuses a malformed version before touching the
network or the target directory (the download itself is not tested: CI
stays offline)."""

import os
import subprocess

import bench_scripts

SCRIPT = os.path.join(bench_scripts.ROOT, "scripts", "fetch-ptxas")


def test_malformed_version_is_refused(tmp_path):
    for bad in ("1.2", "12.8", "latest", "12.8.93; rm -rf /"):
        p = subprocess.run([SCRIPT, bad, str(tmp_path / "out")], capture_output=True, text=True)
        assert p.returncode == 2, bad
        assert "VERSION looks like 12.8.93" in p.stderr
    assert not (tmp_path / "out").exists()


def test_an_existing_ptxas_of_that_version_is_kept(tmp_path):
    # A stand-in that reports the version: no download happens, its path is printed.
    d = tmp_path / "p"
    d.mkdir()
    fake = d / "ptxas"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    fake.chmod(0o755)
    p = subprocess.run([SCRIPT, "12.8.93", str(d)], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == str(d) + "/ptxas"
