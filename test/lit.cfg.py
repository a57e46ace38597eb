# -*- Python -*-
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "DASH"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dash_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [os.path.join(config.dash_obj_root, "bin"), config.llvm_tools_dir]
tools = [
    ToolSubst("dash-opt", unresolved="fatal"),
    ToolSubst("dash-sched", unresolved="fatal"),
    ToolSubst("dash-bench", unresolved="fatal"),
    ToolSubst("mlir-runner", unresolved="ignore"),
    ToolSubst("mlir-opt", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
config.substitutions.append(("%llvm_lib_dir", config.llvm_lib_dir))
config.substitutions.append(("%dash_src_root", config.dash_src_root))
config.substitutions.append(("%dash_obj_root", config.dash_obj_root))

# Features: what this machine can do. GPU tests need a real sm_90 device and
# are reported UNSUPPORTED (never silently absent) elsewhere.
ptxas = shutil.which("ptxas") or (
    os.path.join(config.cuda_root, "bin", "ptxas") if config.cuda_root else None)
if ptxas and os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
if os.environ.get("DASH_GPU_SM90") == "1":
    config.available_features.add("cuda-sm90")
