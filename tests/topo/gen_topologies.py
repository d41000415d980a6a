#!/usr/bin/env python3
"""Writes the hwloc XML topologies of tests/topo (test_topo reads them).

Each node is described below the way its public platform description draws
it: sockets (one NUMA node each), their host bridges, root ports, PCIe
switches and the GPUs and NICs behind them. Run it again after editing a
description; the .xml files are committed so the tests need no Python.
"""
import os
import sys

NVIDIA, AMD, MELLANOX, BROADCOM, INTEL = 0x10DE, 0x1002, 0x15B3, 0x14E4, 0x8086


class Writer:
    def __init__(self):
        self.gp = 0
        self.lines = []

    def next_gp(self):
        self.gp += 1
        return self.gp

    def add(self, depth, text):
        self.lines.append("  " * depth + text)


def cpumask(cpus):
    v = 0
    for c in cpus:
        v |= 1 << c
    h = "%x" % v
    h = h.rjust((len(h) + 7) // 8 * 8, "0")
    return "0x" + ",0x".join(h[i:i + 8] for i in range(0, len(h), 8))


def gpu(bus, vendor=NVIDIA, cls=0x0302, device=0x2330):
    return ("gpu", bus, vendor, cls, device, [])


def nic(bus, rdma=None, netdev=None, vendor=MELLANOX, cls=0x0207, device=0x1021):
    osdevs = []
    if netdev:
        osdevs.append((netdev, 2))
    if rdma:
        osdevs.append((rdma, 3))
    return ("nic", bus, vendor, cls, device, osdevs)


def pcidev(w, depth, d, func=0):
    kind, bus, vendor, cls, device, osdevs = d
    busid = "0000:%02x:00.%d" % (bus, func)
    w.add(depth, '<object type="PCIDev" gp_index="%d" pci_busid="%s" pci_type="%04x [%04x:%04x] [%04x:0000] 00" '
                 'pci_link_speed="0.000000">' % (w.next_gp(), busid, cls, vendor, device, vendor))
    for name, t in osdevs:
        w.add(depth + 1, '<object type="OSDev" gp_index="%d" name="%s" osdev_type="%d"/>' % (w.next_gp(), name, t))
    w.add(depth, "</object>")


def bridge(w, depth, busid, sec, sub, level):
    w.add(depth, '<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="%d" bridge_pci="0000:[%02x-%02x]" '
                 'pci_busid="%s" pci_type="0604 [1000:c030] [0000:0000] 00" pci_link_speed="0.000000">'
          % (w.next_gp(), level, sec, sub, busid))


def switch(w, depth, up_bus, devices):
    """A PCIe switch whose upstream port sits on bus up_bus; downstream port
    k leads to bus up_bus + 2 + k, where device k sits at function 0 (a
    device given a bus of its own keeps it, for the real bus ids)."""
    sub = max(d[1] for d in devices)
    bridge(w, depth, "0000:%02x:00.0" % up_bus, up_bus + 1, sub, 2)
    for k, d in enumerate(devices):
        bridge(w, depth + 1, "0000:%02x:%02x.0" % (up_bus + 1, k), d[1], d[1], 3)
        pcidev(w, depth + 2, d)
        w.add(depth + 1, "</object>")
    w.add(depth, "</object>")


def host_bridge(w, depth, lo, hi, root_ports):
    """root_ports: list of (bus, items) with items a switch ("switch", up_bus,
    devices) or a device straight on the root port."""
    w.add(depth, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" bridge_pci="0000:[%02x-%02x]">'
          % (w.next_gp(), lo, hi))
    for i, (bus, item) in enumerate(root_ports):
        top = item[1] if item[0] == "switch" else item[1]
        sub = max([d[1] for d in item[2]]) if item[0] == "switch" else item[1]
        bridge(w, depth + 1, "0000:%02x:%02x.0" % (lo, i + 1), top, sub, 1)
        if item[0] == "switch":
            switch(w, depth + 2, item[1], item[2])
        else:
            pcidev(w, depth + 2, item)
        w.add(depth + 1, "</object>")
    w.add(depth, "</object>")


def node(name, sockets, cores_per_socket, threads=2):
    """sockets: list of lists of host bridges (lo, hi, root_ports)."""
    w = Writer()
    n = len(sockets)
    total = n * cores_per_socket
    all_cpus = range(total * threads)
    def socket_cpus(s):
        return [t * total + s * cores_per_socket + c for t in range(threads) for c in range(cores_per_socket)]
    w.add(0, '<?xml version="1.0" encoding="UTF-8"?>')
    w.add(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    w.add(0, '<topology version="2.0">')
    m = cpumask(all_cpus)
    nm = cpumask(range(n))
    w.add(1, '<object type="Machine" os_index="0" cpuset="%s" complete_cpuset="%s" allowed_cpuset="%s" nodeset="%s" '
             'complete_nodeset="%s" allowed_nodeset="%s" gp_index="%d">' % (m, m, m, nm, nm, nm, w.next_gp()))
    # What the file is, as an info attribute rather than an XML comment:
    # hwloc built without libxml2 (no libhwloc-plugins) reads XML with its
    # minimalistic parser, which refuses comments.
    w.add(2, '<info name="HetCCLTestTopology" value="%s: written by tests/topo/gen_topologies.py"/>' % name)
    for s, bridges in enumerate(sockets):
        cs = cpumask(socket_cpus(s))
        ns = cpumask([s])
        w.add(2, '<object type="Package" os_index="%d" cpuset="%s" complete_cpuset="%s" nodeset="%s" '
                 'complete_nodeset="%s" gp_index="%d">' % (s, cs, cs, ns, ns, w.next_gp()))
        w.add(3, '<object type="NUMANode" os_index="%d" cpuset="%s" complete_cpuset="%s" nodeset="%s" '
                 'complete_nodeset="%s" gp_index="%d" local_memory="1099511627776"/>' % (s, cs, cs, ns, ns, w.next_gp()))
        for c in range(cores_per_socket):
            core = s * cores_per_socket + c
            pus = [t * total + core for t in range(threads)]
            cm = cpumask(pus)
            w.add(3, '<object type="Core" os_index="%d" cpuset="%s" complete_cpuset="%s" nodeset="%s" '
                     'complete_nodeset="%s" gp_index="%d">' % (core, cm, cm, ns, ns, w.next_gp()))
            for pu in pus:
                pm = cpumask([pu])
                w.add(4, '<object type="PU" os_index="%d" cpuset="%s" complete_cpuset="%s" nodeset="%s" '
                         'complete_nodeset="%s" gp_index="%d"/>' % (pu, pm, pm, ns, ns, w.next_gp()))
            w.add(3, "</object>")
        for lo, hi, ports in bridges:
            host_bridge(w, 3, lo, hi, ports)
        w.add(2, "</object>")
    w.add(1, "</object>")
    w.add(0, "</topology>")
    return "\n".join(w.lines) + "\n"


def pair_bridge(gpu_dev, nics, lo):
    """One host bridge, one root port, one switch with a GPU and its NIC(s)."""
    return (lo, lo + 0x0F, [(lo + 1, ("switch", lo + 1, [gpu_dev] + nics))])


def dgx_h100():
    # 2 sockets (56 cores, 2 threads each), 8 H100 SXM at their published bus
    # ids, each with one ConnectX-7 behind the same PCIe switch; a management
    # Ethernet NIC on socket 0's first host bridge.
    gbus = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]
    sockets = [[], []]
    mgmt = (0x00, 0x0F, [(0x04, nic(0x04, netdev="eno1", vendor=INTEL, cls=0x0200, device=0x1563))])
    sockets[0].append(mgmt)
    for i, b in enumerate(gbus):
        nd = nic(b + 1, rdma="mlx5_%d" % i, netdev="ibp%ds0" % (b + 1))
        sockets[0 if i < 4 else 1].append(pair_bridge(gpu(b), [nd], b - 3))
    return node("DGX H100-like: 8 GPUs, 8 NICs, 2 sockets, a switch per GPU-NIC pair", sockets, 56)


def mi300x():
    # 2 EPYC sockets (96 cores), 8 MI300X (class 0x1200) each with a
    # Broadcom 400G NIC behind one switch; the NICs' names do not follow the
    # GPUs' order (their bus numbers interleave across sockets).
    gbus = [0x05, 0x25, 0x45, 0x65, 0x85, 0xA5, 0xC5, 0xE5]
    order = [3, 2, 1, 0, 7, 6, 5, 4]  # bnxt_re<k> behind GPU i
    sockets = [[], []]
    for i, b in enumerate(gbus):
        g = gpu(b, vendor=AMD, cls=0x1200, device=0x74A1)
        nd = nic(b + 1, rdma="bnxt_re%d" % order[i], netdev="enp%ds0np0" % (b + 1), vendor=BROADCOM, cls=0x0200,
                 device=0x1760)
        sockets[0 if i < 4 else 1].append(pair_bridge(g, [nd], b - 3))
    return node("MI300X-like: 8 GPUs, 8 NICs, 2 sockets, a switch per GPU-NIC pair", sockets, 96)


def four_gpu_one_nic():
    # 1 socket, 1 host bridge: root port 1 to a switch with GPUs 0, 1 and the
    # NIC; root port 2 to a switch with GPUs 2, 3.
    ports = [(0x11, ("switch", 0x11, [gpu(0x13), gpu(0x14), nic(0x15, rdma="mlx5_0", netdev="ibs1")])),
             (0x21, ("switch", 0x21, [gpu(0x23), gpu(0x24)]))]
    return node("4 GPUs, 1 NIC, 1 socket", [[(0x10, 0x2F, ports)]], 32)


def two_nics_per_switch():
    # Switch A: GPU + 2 NICs; switch B: GPU + 2 NICs; switch C: 2 GPUs + 2
    # NICs; switch D (socket 1): GPU + 1 NIC.
    def nd(b, k):
        return nic(b, rdma="mlx5_%d" % k, netdev="ib%d" % k)
    s0 = [(0x10, 0x1F, [(0x11, ("switch", 0x11, [gpu(0x13), nd(0x14, 0), nd(0x15, 1)]))]),
          (0x20, 0x2F, [(0x21, ("switch", 0x21, [gpu(0x23), nd(0x24, 2), nd(0x25, 3)]))]),
          (0x30, 0x3F, [(0x31, ("switch", 0x31, [gpu(0x33), gpu(0x34), nd(0x35, 4), nd(0x36, 5)]))])]
    s1 = [(0x90, 0x9F, [(0x91, ("switch", 0x91, [gpu(0x93), nd(0x94, 6)]))])]
    return node("two NICs per switch: 5 GPUs, 7 NICs, 2 sockets", [s0, s1], 32)


def nics_one_socket():
    # 8 GPUs as the DGX-like node, but only socket 0's switches hold NICs.
    gbus = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]
    sockets = [[], []]
    for i, b in enumerate(gbus):
        nics = [nic(b + 1, rdma="mlx5_%d" % i, netdev="ib%d" % i)] if i < 4 else []
        sockets[0 if i < 4 else 1].append(pair_bridge(gpu(b), nics, b - 3))
    return node("8 GPUs, 4 NICs all on socket 0", sockets, 48)


def veth_host(name, ifname):
    # A one-socket host whose only NIC is `ifname` (a veth the test makes),
    # drawn as a network device on a PCI function: host ranks take it.
    ports = [(0x01, nic(0x02, netdev=ifname, vendor=INTEL, cls=0x0200, device=0x1572))]
    return node(name, [[(0x00, 0x0F, ports)]], 64, threads=1)


def veth_stripe_host(name, ifnames):
    # A one-socket host whose two NICs (the veths `ifnames` the test makes)
    # sit behind one PCIe switch: a host rank gets both and stripes.
    nics = [nic(0x03 + i, netdev=n, vendor=INTEL, cls=0x0200, device=0x1572) for i, n in enumerate(ifnames)]
    ports = [(0x01, ("switch", 0x01, nics))]
    return node(name, [[(0x00, 0x0F, ports)]], 64, threads=1)


FILES = {
    "dgx_h100.xml": dgx_h100,
    "mi300x.xml": mi300x,
    "four_gpu_one_nic.xml": four_gpu_one_nic,
    "two_nics_per_switch.xml": two_nics_per_switch,
    "nics_one_socket.xml": nics_one_socket,
    "veth_a.xml": lambda: veth_host("host A of test_topo_veth.sh", "htopo-a"),
    "veth_b.xml": lambda: veth_host("host B of test_topo_veth.sh", "htopo-b"),
    "veth_stripe.xml": lambda: veth_stripe_host("either host of test_stripe_veth.sh", ["hstripe0", "hstripe1"]),
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, fn in FILES.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(fn())
    # A file with errors: an object that never closes, and a bad attribute.
    with open(os.path.join(out, "broken.xml"), "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<topology version="2.0">\n'
                '  <object type="Machine" os_index="0" cpuset="0xzz" gp_index="1">\n'
                '    <object type="Package" os_index="0"\n')
