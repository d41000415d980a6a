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

# ofi_ctrl: cfg (bit 0 raw keys, bit 1 hello seen), raw key size - 1, receives
# (count, finished, one size byte each: size index = b % 4 of 0, 100, 16 KiB,
# 3 MiB), sends (count, advertisements seen, sizes), then messages: a pick
# byte (< 16 the true hello; 16..175 a 128-byte wire with magic and tag set,
# type = 1 + t % 5, bit 0 keeps raw_len, bit 1 sends it; else length + bytes).
def ofi_ctrl(mtype, msg, nbytes=0, addr=0, key=0, raw_len=0, raw=b"", kind=0, count=0, seq=0):
    c = struct.pack("<IBBBBII", 0, mtype - 1, kind, 0, 0, 0, seq)
    c += struct.pack("<QQQQQiI", msg, nbytes, addr, key, count, 0, raw_len)
    return c + raw + bytes(64 + 64 - len(c) - len(raw))


def ofi_setup(cfg, raw_size, recvs, sends, head=0, seen=0):
    b = bytes([cfg, raw_size - 1, len(recvs)])
    if recvs:
        b += bytes([head]) + bytes(recvs)
    b += bytes([len(sends)])
    if sends:
        b += bytes([seen]) + bytes(sends)
    return b


put("ofi_ctrl", "hello-rtr", ofi_setup(0, 8, [3, 3, 1, 0], [3, 1, 1, 0]) + b"\x00" +
    b"\x10" + ofi_ctrl(1, 0, 3 << 20, 0x1000, 77, kind=3) + b"\x10" + ofi_ctrl(1, 1, 3 << 20, 0x2000, 78, kind=3))
put("ofi_ctrl", "raw-rtr", ofi_setup(3, 16, [3], [3]) + b"\x13" + ofi_ctrl(1, 0, 3 << 20, 0x40, 0x5a5a0000, 16,
                                                                             bytes(range(16)), kind=3))
put("ofi_ctrl", "empty-mismatch", ofi_setup(2, 8, [0, 3], [0]) + b"\x10" + ofi_ctrl(2, 0) + b"\x10" +
    ofi_ctrl(3, 1, 5, kind=3))
put("ofi_ctrl", "eager-mismatch", ofi_setup(2, 8, [], [1, 1]) + b"\x10" + ofi_ctrl(1, 0, 99, kind=1) + b"\x10" +
    ofi_ctrl(1, 1, 100, kind=2))
put("ofi_ctrl", "short", ofi_setup(2, 8, [1], [1]) + b"\xff\x20" + bytes(32))
