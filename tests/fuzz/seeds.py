#!/usr/bin/env python3
"""Writes the seed corpus (corpus/<target>/seed-*): a few well-formed inputs
per target, so the fuzzers start from messages that pass the first checks.
Run from tests/fuzz; the result is kept in the repository. Inputs the
fuzzers found (crashes fixed since) are kept there as regress-*."""
import os
import struct

TAG = 0x0123456789ABCDEF


def put(target, name, data):
    d = os.path.join("corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def addr4(port, ip=(127, 0, 0, 1)):
    return struct.pack(">HHI", 4, port, 0) + bytes(ip) + bytes(12)


def preamble(mtype, tag=TAG):
    return struct.pack(">IHHQ", 0x48434231, 1, mtype, tag)


# The unique id: magic, version, flags, root address, tag, secret, nranks, zero.
for n, (nranks, port) in enumerate([(4, 29500), (0, 1), (1 << 20, 65535)]):
    idb = b"HCID" + struct.pack(">HH", 1, 0) + addr4(port) + struct.pack(">Q", TAG) + bytes(range(32))
    idb += struct.pack(">I", nranks)
    put("id", str(n), idb + bytes(128 - len(idb)))
put("id", "v6", b"HCID" + struct.pack(">HH", 1, 0) + struct.pack(">HHI", 6, 80, 3) + bytes(15) + b"\1" +
    struct.pack(">Q", 7) + bytes(32) + struct.pack(">I", 2) + bytes(52))

# bootstrap_wire: first byte picks the parser (0 join, 1 result, 2 data head, 3 hello; 0x80 signs).
join = preamble(2) + struct.pack(">IIQ", 1, 4, 5000) + addr4(40000) + bytes(range(32)) + bytes(32)
put("bootstrap_wire", "join-signed", b"\x80" + join)
put("bootstrap_wire", "join-bad-rank", b"\x80" + preamble(2) + struct.pack(">IIQ", 9, 4, 0) + addr4(1) + bytes(64))
put("bootstrap_wire", "join-unsigned", b"\x00" + join)
head = preamble(3) + struct.pack(">IIII", 0, 0, 4, 4)
put("bootstrap_wire", "result-ok", b"\x01\x03" + head + addr4(1) * 4)
put("bootstrap_wire", "result-rejected", b"\x01\x03" + preamble(3) + struct.pack(">IIII", 2, 1, 4, 1))
put("bootstrap_wire", "data-head", b"\x02" + struct.pack(">IIQ", 1, 42, 64))
hello = preamble(4) + struct.pack(">IIII", 1, 2, 4, 0) + bytes(32) + bytes(32)
put("bootstrap_wire", "hello-signed", b"\x83\x02\x03" + hello)

# hello_acceptor: mode, then (length-1, bytes) pieces. Socket hello: magic, comm_tag, rank, stream, mac.
sock_hello = struct.pack("<QQII", 0x316B736C63637468, TAG, 1, 0) + bytes(32)
put("hello_acceptor", "socket-signed", b"\x02" + bytes([len(sock_hello) - 1]) + sock_hello)
put("hello_acceptor", "socket-pieces", b"\x06" + b"\x09" + sock_hello[:10] + bytes([len(sock_hello) - 11]) + sock_hello[10:])
boot_hello = preamble(4) + struct.pack(">IIII", 1, 2, 4, 0) + bytes(64)
put("hello_acceptor", "boot-signed", b"\x03" + b"\x3f" + boot_hello[:64] + b"\x1f" + boot_hello[64:])
put("hello_acceptor", "boot-wrong-prefix", b"\x01" + b"\x0f" + b"GET / HTTP/1.1\r\n")

# socket_piece: header magic, bytes, msg, offset, total (little-endian), then the payload.
def piece(nbytes, msg, off, total):
    return struct.pack("<IIQQQ", 0x65636970, nbytes, msg, off, total) + bytes(nbytes)
put("socket_piece", "one", piece(100, 0, 0, 100))
put("socket_piece", "two", piece(64, 0, 0, 100) + piece(36, 0, 64, 100))
put("socket_piece", "empty", piece(0, 3, 0, 0))

# rank_table: the start of a record (header "HCRT" v1; the record size is
# this build's, which the target keeps when the input is short).
put("rank_table", "header", struct.pack("<IHHQ", 0x48435254, 1, 0, 0))
put("rank_table", "empty", b"")
