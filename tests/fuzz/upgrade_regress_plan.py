#!/usr/bin/env python3
# tests/fuzz/upgrade_regress_plan.py FILE...: rewrites committed regress plans (tests/fuzz/regress/plan/) of
# format 2, 3, 4 or 5 as format 6 in place, keeping every byte of their defect; run when a format comes (a file
# of an older format is refused at the version check, so fuzz_regress_plan would no longer reach its bug).
# v5 -> v6: tensor records gain i64 piece_runs + i64 piece_stride (0: one contiguous range) after piece_first,
# INIT_TENSOR's i[6], i[7] (unused before, now RUN and STRIDE) are set to 0 (contiguous, as before), and the
# meta keys tensor_parallel, data_parallel are new (a plan may leave them out: 0).
# v4 -> v5: only the version (format 5 added the meta keys nccl_*, which a plan may leave out: 0).
# v2 plan.bin -> v4: rank records gain u32 init_refresh (0), tensor records gain i32 piece_rank + i64 piece_first (0: format 3), a comms section
# (id 9) with no communicators (format 4); file size and CRC32 recomputed. Every other byte is kept.
import struct, sys, zlib
def tensors_v6(p, ver):  # v2: + piece_rank, piece_first (12 bytes of 0); v < 6: + piece_runs, piece_stride (16)
    n, = struct.unpack_from('<I', p, 0); at = 4; out = [p[:4]]
    for _ in range(n):
        start = at
        for _s in range(2):
            ln, = struct.unpack_from('<I', p, at); at += 4
            if ln != 0xffffffff: at += ln
        at += 4 + 3 + 32 + 4 + 24 + 12
        out.append(p[start:at] + b'\0' * 12 if ver == 2 else p[start:at + 12])
        if ver > 2: at += 12
        out.append(b'\0' * 16)
    assert at == len(p), (at, len(p))
    return b''.join(out)
INSTR = 4 * 2 + 3 * 4 + 7 * 4 + 12 * (1 + 4 + 4 + 8 + 8) + 16 * 8 + 8 * 4
def ranks_v3(p):  # rank records gain u32 init_refresh (0) after ntimers
    world, narenas = struct.unpack_from('<II', p, 0); at = 8; out = [p[:8]]
    for _ in range(world):
        out.append(p[at:at + 8] + b'\0' * 4); at += 8
        out.append(p[at:at + 8 * narenas]); at += 8 * narenas
        for _prog in range(2):
            n, = struct.unpack_from('<I', p, at)
            out.append(p[at:at + 4 + n * INSTR]); at += 4 + n * INSTR
    assert at == len(p), (at, len(p))
    return b''.join(out)
INIT_TENSOR, INTS = 16, 4 * 2 + 3 * 4 + 7 * 4 + 12 * (1 + 4 + 4 + 8 + 8)
def ranks_v6(p):  # INIT_TENSOR's i[6], i[7] (RUN, STRIDE since format 6; unused before, maybe fuzzed) become 0
    world, narenas = struct.unpack_from('<II', p, 0); at = 8; out = bytearray(p)
    for _ in range(world):
        at += 12 + 8 * narenas
        for _prog in range(2):
            n, = struct.unpack_from('<I', p, at); at += 4
            for k in range(n):
                rec = at + k * INSTR
                if struct.unpack_from('<H', p, rec)[0] == INIT_TENSOR:
                    out[rec + INTS + 6 * 8:rec + INTS + 8 * 8] = b'\0' * 16
            at += n * INSTR
    assert at == len(p), (at, len(p))
    return bytes(out)
for path in sys.argv[1:]:
    d = open(path, 'rb').read()
    ver, nsec, size = struct.unpack_from('<IIQ', d, 8)
    assert d[:8] == b'DDPCPLAN' and ver in (2, 3, 4, 5) and size == len(d), (path, ver)
    ents = [struct.unpack_from('<IIQQ', d, 24 + 24 * k) for k in range(nsec)]
    secs = [(i, r, d[off:off + ln]) for (i, r, off, ln) in ents]
    secs = [(i, r, tensors_v6(p, ver) if i == 3 else p) for (i, r, p) in secs]
    if ver == 2:  # format 3's rank fields; a format 3 file has them already
        secs = [(i, r, ranks_v3(p) if i == 7 else p) for (i, r, p) in secs]
    secs = [(i, r, ranks_v6(p) if i == 7 else p) for (i, r, p) in secs]
    if ver < 4:
        secs += [(9, 0, struct.pack('<I', 0))]
    at = 24 + 24 * len(secs); table = b''; payload = b''
    for i, r, p in secs:
        table += struct.pack('<IIQQ', i, r, at, len(p)); payload += p; at += len(p)
    body = d[:8] + struct.pack('<IIQ', 6, len(secs), at + 4) + table + payload
    open(path, 'wb').write(body + struct.pack('<I', zlib.crc32(body) & 0xffffffff))
    print(path, len(d), '->', at + 4)
