#!/usr/bin/env python3
"""The layering checker itself: it reports an include that points up, and only that."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")


def make_tree(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as out:
            out.write(text)


def check(files):
    with tempfile.TemporaryDirectory() as root:
        make_tree(root, files)
        done = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        return done.returncode, done.stdout


class CheckLayersTest(unittest.TestCase):
    def test_includes_that_point_down_pass(self):
        code, out = check({
            "base/units.h": "#pragma once\n",
            "cli/hosts/host.h": '#include "base/units.h"\n',
            "cli/run/executor.cc": '#include "hosts/host.h"\n#include <vector>\n',
            "cli/main.cc": '#include "run/executor.h"\n',
        })
        self.assertEqual(code, 0, out)
        self.assertEqual(out, "")

    def test_an_include_that_points_up_is_named_with_its_line(self):
        code, out = check({
            "base/status.cc": '#include <string>\n#include "run/executor.h"\n',
            "cli/run/executor.h": "#pragma once\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("base/status.cc:2: layer 'base' includes cli/run/executor.h of layer 'run'",
                      out)

    def test_a_component_reaching_into_the_commands_fails(self):
        code, out = check({
            "emulator/runtime/instance.cc": '#include "commands/perf_command.h"\n',
            "cli/commands/perf_command.h": "#pragma once\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("layer 'emulator' includes cli/commands/perf_command.h", out)

    def test_tests_may_include_any_layer(self):
        code, out = check({
            "cli/hosts/host_test.cc": '#include "builtin_platform.h"\n',
            "cli/hosts/testing/fake_host.cc": '#include "run/executor.h"\n',
            "cli/run/executor.h": "#pragma once\n",
            "cli/builtin_platform.h": "#pragma once\n",
        })
        self.assertEqual(code, 0, out)

    def test_a_file_outside_every_layer_is_reported(self):
        code, out = check({"cli/newfolder/thing.cc": "int x;\n"})
        self.assertEqual(code, 1)
        self.assertIn("cli/newfolder/thing.cc: in no layer", out)

    def test_a_root_without_sources_fails_instead_of_passing(self):
        code, out = check({"README.md": "not a source tree\n"})
        self.assertEqual(code, 1)
        self.assertIn("no sources of any layer here", out)


if __name__ == "__main__":
    unittest.main()
