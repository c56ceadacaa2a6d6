"""unittest.main for onchip's Python tests under Bazel: runs the module's tests and, when Bazel
asks for it ($XML_OUTPUT_FILE), writes one JUnit <testcase> per test, so `tools/onchip test`
counts Python test cases the way it counts GoogleTest ones (testing.count_cases)."""
import os
import sys
import time
import unittest
import xml.etree.ElementTree as ET


class _Recorder(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cases = []  # (test, outcome, detail, seconds)
        self._started = 0.0

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def _record(self, test, outcome, detail=""):
        self.cases.append((test, outcome, detail, time.monotonic() - self._started))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failure", self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self.errors[-1][1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)


def _write_junit(path, suite_name, result):
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name=suite_name, tests=str(len(result.cases)),
                          failures=str(len(result.failures)), errors=str(len(result.errors)))
    for test, outcome, detail, seconds in result.cases:
        cls, _, name = test.id().rpartition(".")
        case = ET.SubElement(suite, "testcase", classname=cls, name=name, time="%.3f" % seconds)
        if outcome != "passed":
            ET.SubElement(case, outcome, message=detail.splitlines()[-1] if detail else "").text = detail
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main(argv=None):
    """Runs the tests of __main__ (argv as unittest.main takes it); exits 0 only if all pass."""
    program = unittest.main(argv=argv, exit=False, verbosity=2,
                            testRunner=unittest.TextTestRunner(resultclass=_Recorder, verbosity=2))
    result = program.result
    xml_path = os.environ.get("XML_OUTPUT_FILE")
    if xml_path:
        _write_junit(xml_path, os.environ.get("TEST_TARGET", sys.argv[0]), result)
    sys.exit(0 if result.wasSuccessful() and result.testsRun > 0 else 1)
