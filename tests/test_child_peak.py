"""The tests' peak-memory checks measure the child, not the process that started it (``tests/child_peak.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_child_of_a_large_parent_reports_its_own_peak_not_the_parents():
    script = """
import json, os, subprocess, sys
from tests.child_peak import measured_command, own_peak_kb
big = bytearray(400 << 20)
for i in range(0, len(big), 4096):
    big[i] = 1                                  # 400 MiB resident in the parent
child = subprocess.Popen([sys.executable, "-c", "print(1)"], stdout=subprocess.DEVNULL)
inherited = os.wait4(child.pid, 0)[2].ru_maxrss
measured = subprocess.run(measured_command(["-c", "import sys; sys.stderr.write('kept\\\\n')"]),
                          capture_output=True, text=True)
print(json.dumps([inherited, *own_peak_kb(measured.stderr)]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    inherited, stderr, own = json.loads(out.stdout)
    assert inherited > 400 << 10                # what ru_maxrss says of a tiny child: the parent's size
    assert own is not None and own < 100 << 10 and stderr == "kept\n"
