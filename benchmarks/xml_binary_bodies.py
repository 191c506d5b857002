"""XML JTL decoding with binary response bodies: the scrub-and-reparse path stays linear.

JMeter 5.6.3 saves a binary body's control characters as references XML 1.0 forbids
(``&#x0;`` ...). ``XmlStreamDecoder`` parses a group of elements, and only when that fails
scrubs the group (one regex pass) and parses it again. This script decodes generated
JTLs of ``n`` and ``2n`` samples, with plain and with binary bodies (each 256-byte body
holding 29 forbidden characters), and prints CPU seconds and two ratios:

* ``2n / n`` for each kind: about 2 when decoding is linear;
* ``binary / plain`` at ``2n``: the price of the scrub and the second parse.

    .venv/bin/python -m benchmarks.xml_binary_bodies --samples 20000
"""

from __future__ import annotations

import argparse
import time

from loadguard.jtl.raw_rows import BadRowLog
from loadguard.jtl.xml_rows import XmlStreamDecoder

PROLOG = b'<?xml version="1.0" encoding="UTF-8"?>\n<testResults version="1.2">\n'
BINARY = "".join(f"&#x{c:x};" if c not in (9, 10, 13) else chr(c) for c in range(32))
BINARY += "".join(chr(c) for c in range(32, 127)).replace("&", "&amp;").replace("<", "&lt;")


def jtl(samples: int, binary: bool) -> bytes:
    body = BINARY if binary else "ok"
    out = [PROLOG]
    for i in range(samples):
        out.append(
            f'<httpSample t="{i % 97}" it="0" lt="1" ct="0" ts="{1_700_000_000_000 + i}" '
            f's="true" lb="l{i % 7}" rc="200" rm="OK" tn="TG 1-{i % 50}" dt="text" by="256" '
            f'sby="115" ng="50" na="50">\n  <responseData class="java.lang.String">{body}'
            "</responseData>\n  <java.net.URL>http://127.0.0.1/bin</java.net.URL>\n"
            "</httpSample>\n".encode()
        )
    out.append(b"</testResults>\n")
    return b"".join(out)


def decode_cpu(data: bytes, repeat: int) -> tuple[float, int, int]:
    """Best CPU seconds of ``repeat`` whole-buffer decodes; rows and replaced characters."""
    best = float("inf")
    rows = illegal = 0
    for _ in range(repeat):
        dec = XmlStreamDecoder(BadRowLog())
        t = time.process_time()
        parts = dec.feed(data) + dec.finish()
        best = min(best, time.process_time() - t)
        rows, illegal = sum(len(p) for p in parts), dec.illegal_chars
        assert dec.bad.count == 0
    return best, rows, illegal


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.samples
    cpu: dict[tuple[bool, int], float] = {}
    for binary in (False, True):
        for size in (n, 2 * n):
            data = jtl(size, binary)
            cpu[binary, size], rows, illegal = decode_cpu(data, args.repeat)
            kind = "binary" if binary else "plain"
            print(f"{kind:>6} {size:>8} samples {len(data) / 1e6:7.1f} MB: "
                  f"{cpu[binary, size]:6.3f} s CPU, {rows} rows, {illegal} replaced")  # fmt: skip
    for binary in (False, True):
        kind = "binary" if binary else "plain"
        print(f"{kind:>6} 2n/n: {cpu[binary, 2 * n] / cpu[binary, n]:.2f} (2.0 = linear)")
    print(f"binary/plain at 2n: {cpu[True, 2 * n] / cpu[False, 2 * n]:.2f}")


if __name__ == "__main__":
    main()
