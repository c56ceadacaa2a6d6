#!/bin/sh
# rdma-core's own pyverbs tests (Debian's rdma-core ships them gzipped, python3-pyverbs runs them)
# as the judge of the provider: the ones listed must all run and pass, none skipped.
# Arguments: LAUNCH_PY PLUGIN
#
# Left out: DMTest.test_multi_process_alloc_dm (forked children have no device: ENODEV, see
# driver/verbs/README.md); the raw packet QP tests (EOPNOTSUPP: a skip); and every test that
# moves data between two resources objects: each opens its own context, and each context of the
# "sim" locator is a software ConnectX of its own with the same GIDs, so the peer is never
# reached (driver/verbs/README.md).
set -u
launch="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; plugin="$(readlink -f "$2")"
src=/usr/share/doc/rdma-core/tests
[ -f "$src/run_tests.py" ] || { echo "not ok - $src missing (apt-get install rdma-core)"; exit 1; }
/usr/bin/python3 -c "import pyverbs" 2>/dev/null || { echo "not ok - no pyverbs (apt-get install python3-pyverbs)"; exit 1; }
work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/pyverbs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/tests" && gunzip -f "$work"/tests/*.gz || exit 1

set -- \
  test_pd.PDTest \
  test_device.DeviceTest.test_dev_list test_device.DeviceTest.test_open_dev \
  test_device.DeviceTest.test_phys_port_cnt_ex test_device.DeviceTest.test_query_gid \
  test_device.DeviceTest.test_query_gid_ex test_device.DeviceTest.test_query_gid_table \
  test_device.DeviceTest.test_query_gid_table_bad_flow test_device.DeviceTest.test_query_pkey \
  test_device.DeviceTest.test_query_port test_device.DeviceTest.test_query_port_bad_flow \
  test_device.DMTest.test_create_dm test_device.DMTest.test_create_dm_bad_flow \
  test_device.DMTest.test_destroy_dm test_device.DMTest.test_destroy_dm_bad_flow \
  test_device.DMTest.test_dm_read test_device.DMTest.test_dm_write \
  test_device.DMTest.test_dm_write_bad_flow \
  test_mr.DeviceMemoryAPITest \
  test_mr.MRTest.test_reg_mr_bad_flags \
  test_mr.MWTest.test_reg_mw_wrong_type \
  test_cq.CQAPITest \
  test_device.DeviceTest.test_query_device test_device.DeviceTest.test_query_device_ex \
  test_qp.QPTest.test_create_rc_qp_no_attr test_qp.QPTest.test_create_uc_qp_no_attr \
  test_qp.QPTest.test_create_ud_qp_no_attr test_qp.QPTest.test_create_rc_qp_with_attr \
  test_qp.QPTest.test_create_uc_qp_with_attr test_qp.QPTest.test_create_ud_qp_with_attr \
  test_qp.QPTest.test_create_rc_qp_ex_no_attr test_qp.QPTest.test_create_uc_qp_ex_no_attr \
  test_qp.QPTest.test_create_ud_qp_ex_no_attr test_qp.QPTest.test_create_rc_qp_ex_with_attr \
  test_qp.QPTest.test_create_uc_qp_ex_with_attr test_qp.QPTest.test_create_ud_qp_ex_with_attr \
  test_qp.QPTest.test_query_rc_qp test_qp.QPTest.test_query_uc_qp test_qp.QPTest.test_query_ud_qp \
  test_qp.QPTest.test_query_data_in_order test_qp.QPTest.test_modify_ud_qp
expected=48

out="$work/out.log"
cd "$work" && /usr/bin/python3 "$launch" --plugin "$plugin" -- \
  /usr/bin/python3 tests/run_tests.py -v "$@" >"$out" 2>&1
rc=$?
cat "$out"
failures=0
[ $rc -eq 0 ] || { echo "not ok - pyverbs exited $rc"; failures=$((failures + 1)); }
grep -q "^Ran $expected tests" "$out" || { echo "not ok - expected $expected tests to run"; failures=$((failures + 1)); }
if grep -q "skipped" "$out"; then echo "not ok - a test was skipped"; failures=$((failures + 1)); fi
[ $failures -eq 0 ] && echo "ok - $expected pyverbs tests passed"
exit $failures
