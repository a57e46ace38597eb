"""bench/source_commit.py: a benchmark run names the compiler commit of the
kernels it timed, from the manifests scripts/aot writes."""
import json

import bench_scripts

sc = bench_scripts.load("source_commit")


def _manifest(d, name, **fields):
    with open(d / (name + ".json"), "w") as f:
        json.dump(dict(name=name, **fields), f)


def test_common_commit(tmp_path):
    _manifest(tmp_path, "a", source_commit="163632b")
    _manifest(tmp_path, "b", source_commit="163632b")
    assert sc.of_kernel_dir(str(tmp_path)) == "163632b"


def test_mixed_commits_are_named(tmp_path):
    _manifest(tmp_path, "a", source_commit="163632b")
    _manifest(tmp_path, "b", source_commit="8338f7e-dirty")
    assert sc.of_kernel_dir(str(tmp_path)) == "mixed:163632b,8338f7e-dirty"


def test_unknown_without_records(tmp_path):
    _manifest(tmp_path, "old")  # kernels from before the field
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    assert sc.of_kernel_dir(str(tmp_path)) == "unknown"
    assert sc.of_kernel_dir(str(tmp_path / "missing")) == "unknown"
