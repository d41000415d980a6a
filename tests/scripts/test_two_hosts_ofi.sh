#!/bin/bash
# test_two_hosts.sh (two network namespaces joined by a veth pair, each its
# own "host") with every link on the ofi transport over tcp;ofi_rxm
# (HETCCL_TEST_TRANSPORT=ofi: test_collectives sets HETCCL_TRANSPORT in each
# rank), without its 2^20+3 job (test_collectives_ofi.sh covers that size on
# one host). Its 2+2 job starts within a second of the veth coming up,
# before libfabric lists it (it lists running interfaces only): ofi setup
# must wait for the bootstrap's interface, not take loopback's domain.
# Needs libfabric: without it this test FAILS.
# Usage: test_two_hosts_ofi.sh <build-dir>
set -u
BUILD=${1:?usage: test_two_hosts_ofi.sh <build-dir>}
. "$(dirname "$0")/lib/preflight.sh"
need_ofi "$BUILD/bin/hetccl-info"
export HETCCL_TEST_TRANSPORT=ofi HETCCL_OFI_PROVIDER=tcp TWO_HOSTS_QUICK=1
exec bash "$(dirname "$0")/test_two_hosts.sh" "$BUILD"
