# -*- Python -*-
# Runs every gtest binary under build/unittests (names end in "Tests").
import os

import lit.formats

config.name = "DASH-Unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.dash_obj_root, "unittests")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
