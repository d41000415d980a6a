#!/bin/bash
# ofi links striped over two NICs: test_stripe_veth.sh's runs (two
# namespaces, two veth rails, results and tx_bytes shares checked) over the
# ofi transport, provider tcp (src/transport/ofi_stripe.c).
#
# Usage: test_stripe_veth_ofi.sh <build-dir>
exec bash "$(dirname "$0")/test_stripe_veth.sh" "${1:?usage: test_stripe_veth_ofi.sh <build-dir>}" ofi
