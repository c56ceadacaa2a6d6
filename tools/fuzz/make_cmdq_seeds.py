#!/usr/bin/env python3
"""Writes the seed corpus of the cmdq mailbox fuzz target (uapi/cmdq/fuzz/mailbox_fuzz.cc).

Each seed is a well-formed (or deliberately malformed) command in the harness's input layout:
flags, reply length, the 64-byte cmdq entry, then 576-byte blocks at bus address (i+1)*1024.
Offsets are the command queue layout's (uapi/cmdq; mlx5_ib's include/linux/mlx5/device.h
mlx5_cmd_layout). Usage:
  python3 tools/fuzz/make_cmdq_seeds.py uapi/cmdq/fuzz/corpus
"""
import os
import struct
import sys

SIG, ALIAS, WRITE, FIX_TYPE = 1, 2, 4, 8


def xor8(b):
    x = 0
    for v in b:
        x ^= v
    return x


def blocks_for(n):
    return 0 if n <= 16 else (n - 16 + 511) // 512


def chain(data, first_index, token, sign, high=0):
    """Blocks carrying data[16:], numbered from 0, at addresses (first_index+k+1)*1024."""
    n = blocks_for(len(data))
    out = []
    for k in range(n):
        b = bytearray(576)
        part = data[16 + 512 * k:16 + 512 * (k + 1)]
        b[0:len(part)] = part
        nxt = (first_index + k + 2) * 1024 | high if k + 1 < n else 0
        struct.pack_into(">QI", b, 560, nxt, k)
        b[573] = token
        if sign:
            b[574] = 0xff ^ xor8(b[512:574])
            b[575] = 0xff ^ xor8(b[0:575])
        out.append(b)
    return out


def seed(in_len, out_len, reply_len, flags=WRITE, token=0x2a, high=0, mutate=None):
    msg = bytes((i * 7 + 3) & 0xff for i in range(in_len))
    sign = bool(flags & SIG)
    ins = chain(msg, 0, token, sign, high)
    outs = chain(bytes(out_len), len(ins), token, sign, high)
    e = bytearray(64)
    e[0] = 7
    struct.pack_into(">I", e, 4, in_len)
    struct.pack_into(">Q", e, 8, (1024 | high) if ins else 0)
    e[16:16 + min(16, in_len)] = msg[:16]
    struct.pack_into(">Q", e, 48, ((len(ins) + 1) * 1024 | high) if outs else 0)
    struct.pack_into(">I", e, 56, out_len)
    e[60] = token
    e[63] = 1
    if sign:
        e[61] = 0xff ^ xor8(e)
    blocks = ins + outs
    if mutate:
        mutate(e, blocks)
    return bytes([flags]) + struct.pack(">H", reply_len) + bytes(e) + b"".join(blocks)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)

    def loop(e, b):  # input block 1 points back at block 0
        struct.pack_into(">Q", b[1], 560, 1024)

    def bad_token(e, b):
        b[1][573] ^= 1

    seeds = {
        "inline_only": seed(16, 16, 16),
        "two_in_three_out": seed(600, 1100, 700),
        "two_in_three_out_signed": seed(600, 1100, 700, flags=WRITE | SIG),
        "aliased_high_bits": seed(1100, 600, 600, flags=WRITE | ALIAS, high=0x5 << 32),
        "query_hca_cap_out": seed(16, 4112, 4112),
        "manage_pages_in": seed(16 + 8 * 300, 16, 16),
        "loop": seed(2000, 16, 16, mutate=loop),
        "token_mismatch": seed(1100, 16, 16, mutate=bad_token),
        "zero_length": seed(0, 0, 0),
    }
    for name, data in seeds.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {out_dir}")


if __name__ == "__main__":
    main()
