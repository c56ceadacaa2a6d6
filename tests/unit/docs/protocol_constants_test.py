"""The Python client of the device daemon's status request (tools/verbs_env/daemon_status.py)
frames it with the constants uapi/simd_protocol.h defines: the magic, the protocol version and
the status message's type. A version bump in the header that the Python side missed makes every
launcher say that no daemon answers."""
import os
import re
import unittest

from source_tree import root


def header_constant(text, pattern):
    m = re.search(pattern, text)
    if m is None:
        raise AssertionError("uapi/simd_protocol.h has no match for " + pattern)
    return int(m.group(1), 0)


class ProtocolConstantsTest(unittest.TestCase):
    def test_python_frames_match_the_header(self):
        top = root()
        with open(os.path.join(top, "uapi", "simd_protocol.h")) as f:
            header = f.read()
        with open(os.path.join(top, "tools", "verbs_env", "daemon_status.py")) as f:
            python = f.read()
        want = {
            "MAGIC": header_constant(header, r"kMagic = (0x[0-9a-fA-F]+);"),
            "VERSION": header_constant(header, r"kVersion = (\d+);"),
            "STATUS": header_constant(header, r"kStatus = (\d+),"),
        }
        for name, value in want.items():
            m = re.search(r"^" + name + r" = (\S+)$", python, re.M)
            self.assertIsNotNone(m, name + " is not defined in daemon_status.py")
            self.assertEqual(int(m.group(1), 0), value, name + " differs from uapi/simd_protocol.h")


if __name__ == "__main__":
    unittest.main()
