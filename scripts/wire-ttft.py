#!/usr/bin/env python3
"""TTFT by the wire: reads a loopback pcap (tcpdump -i lo -s 128 --time-stamp-precision=nano -w F)
of HTTP/1.1 keep-alive exchanges with one server port, and prints, per request, the time from
the first packet of the request (client -> server, with payload) to the first packet of its
response (server -> client, with payload): the time-to-first-byte the network saw, independent
of when either process got around to its socket. Python standard library only.

Usage: scripts/wire-ttft.py CAPTURE.pcap SERVER_PORT [SKIP_S]
Prints one JSON object: requests (exchanges with a response), mean/p50/p90/p99 wire TTFB in ms,
and the time average of requests the server had received and not yet started answering
("queued") over the capture. SKIP_S drops exchanges whose request came in the first SKIP_S
seconds of the capture (connection set-up).
"""
import json
import struct
import sys


def packets(path):
    """(t_ns, src_port, dst_port, payload_len) for every IPv4/IPv6 TCP packet of the capture."""
    with open(path, "rb") as f:
        head = f.read(24)
        magic = struct.unpack("<I", head[:4])[0]
        if magic == 0xA1B23C4D:
            endian, scale = "<", 1
        elif magic == 0xA1B2C3D4:
            endian, scale = "<", 1000
        elif magic == 0x4D3CB2A1:
            endian, scale = ">", 1
        else:
            endian, scale = ">", 1000
        linktype = struct.unpack(endian + "I", head[20:24])[0]
        while True:
            ph = f.read(16)
            if len(ph) < 16:
                return
            sec, frac, incl, _orig = struct.unpack(endian + "IIII", ph)
            data = f.read(incl)
            t = sec * 1_000_000_000 + frac * scale
            if linktype == 1:  # Ethernet (Linux `lo`)
                ethertype = struct.unpack(">H", data[12:14])[0]
                ip = data[14:]
            elif linktype == 113:  # Linux cooked (`-i any`)
                ethertype = struct.unpack(">H", data[14:16])[0]
                ip = data[16:]
            elif linktype == 276:  # Linux cooked v2
                ethertype = struct.unpack(">H", data[0:2])[0]
                ip = data[20:]
            else:
                raise SystemExit(f"unsupported link type {linktype}")
            if ethertype == 0x0800:
                ihl = (ip[0] & 0x0F) * 4
                total = struct.unpack(">H", ip[2:4])[0]
                if ip[9] != 6:
                    continue
                tcp = ip[ihl:]
                ip_payload = total - ihl
            elif ethertype == 0x86DD:
                if ip[6] != 6:
                    continue
                ip_payload = struct.unpack(">H", ip[4:6])[0]
                tcp = ip[40:]
            else:
                continue
            sport, dport = struct.unpack(">HH", tcp[:4])
            doff = (tcp[12] >> 4) * 4
            yield t, sport, dport, ip_payload - doff


def main():
    path, port = sys.argv[1], int(sys.argv[2])
    skip_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    # Per client port: the request's first packet time while its response has not started.
    waiting = {}
    ttfb = []
    events = []  # (t, +1 request arrived / -1 its answer started), for the queued average
    t0 = None
    t_last = None
    for t, sport, dport, n in packets(path):
        t0 = t if t0 is None else t0
        t_last = t
        if n <= 0:
            continue
        if dport == port:  # client -> server: a request (its first packet counts)
            waiting.setdefault(sport, t)
        elif sport == port and dport in waiting:  # server -> client: the first answer byte
            sent = waiting.pop(dport)
            if sent - t0 >= skip_s * 1e9:
                ttfb.append(t - sent)
                events.append((sent, 1))
                events.append((t, -1))
    if not ttfb:
        raise SystemExit("no exchange found")
    ttfb.sort()
    pick = lambda q: ttfb[min(len(ttfb) - 1, int(q * len(ttfb)))] / 1e6
    events.sort()
    area, level, prev = 0, 0, events[0][0]
    for t, d in events:
        area += level * (t - prev)
        level += d
        prev = t
    span = events[-1][0] - events[0][0]
    print(json.dumps({
        "requests": len(ttfb),
        "mean_ms": round(sum(ttfb) / len(ttfb) / 1e6, 4),
        "p50_ms": round(pick(0.5), 4),
        "p90_ms": round(pick(0.9), 4),
        "p99_ms": round(pick(0.99), 4),
        "queued_at_server_mean": round(area / span, 2) if span else 0.0,
        "capture_s": round((t_last - t0) / 1e9, 3),
    }))


if __name__ == "__main__":
    main()
