#!/usr/bin/env python3
"""Issue 43's real-engine check: does an adaptive sweep's frontier lie within the run-to-run
spread of two full sweeps of the same config?

Usage (repository root): scripts/adaptive-spread.py FULL_A FULL_B ADAPTIVE [--y=output]
       scripts/adaptive-spread.py --selftest
FULL_A, FULL_B, ADAPTIVE: three `inferbench sweep --out` directories of one matrix (two plain
sweeps and one `sweep --adaptive`), one frontier group (the curves of one config: e.g. the
llama.cpp example's ep 1 and ep 4 slot counts).

Points are read as `runner::adaptive::measure_dirs` reads them: every <out>/<point>/ with
job.json, a status.json in state "ok" and a summary.json without `inferbench.invalid_reason`
(failed and invalid points never count). x = median interactivity (tok/s/user, 1000 / median
TPOT in ms); y = throughput per GPU (tok/s/GPU over the row's TP GPUs): input + output tokens
(`tput_per_gpu`, the planner's and `frontier_match`'s y) or, with --y=output, output tokens
only. A frontier is the Pareto frontier of a sweep's valid points (both axes higher-is-better),
read between its knots by the Steffen monotone spline of `core::analytics::interpolate_at`,
never extrapolated.

The spread: at 1,000 evenly spaced x over the overlap of the two full frontiers' x-ranges, the
band between them, [min(y_A, y_B), max(y_A, y_B)], widened by nothing else. The check passes
when the adaptive frontier exists and lies in that band over >= 90 % of the overlap. Also
printed: each sweep's top-level `gpu_seconds` and points, the same check with each sweep in
turn as the one tested against the other two (a full sweep tested against the spread of the
other full sweep and the adaptive one: how far any one run lies from two others), issue 43's
3 % measure (`frontier_match`) between the pairs, and each (ep, conc) point of the three.

Exit: 0 the check passes; 1 it fails; 2 bad arguments or a directory without sweep.json.
"""
import json
import os
import sys

SAMPLES = 1000
PASS_FRACTION = 0.90


def points(out, ykey):
    """The points under one sweep's --out: dicts with dir, valid, why, x, y, ep, conc."""
    pts = []
    for d in sorted(os.listdir(out)):
        p = os.path.join(out, d)
        if d.startswith('_') or not os.path.isdir(p):
            continue
        try:
            with open(os.path.join(p, 'job.json')) as f:
                job = json.load(f)
            with open(os.path.join(p, 'status.json')) as f:
                st = json.load(f)
            with open(os.path.join(p, 'summary.json')) as f:
                s = json.load(f)
            row = (job.get('job') or {}).get('row') or {}
            ib = s.get('inferbench') or {}
            inv = ib.get('invalid_reason')
            gpus = max(int(row.get('tp') or 1), 1)
            x = float(ib['interactivity']['median'])
            y = float(s['output_throughput' if ykey == 'output' else 'total_token_throughput']) / gpus
        except (OSError, ValueError, KeyError, TypeError):
            pts.append(dict(dir=d, valid=False, why='unreadable or unfinished point'))
            continue
        pts.append(dict(dir=d, valid=st.get('state') == 'ok' and not inv,
                        why=inv or st.get('state'), x=x, y=y, ep=row.get('ep'),
                        conc=job.get('conc'), prompts_used=ib.get('prompts_used')))
    return pts


def knots(pts):
    """Pareto frontier of the valid points (x and y higher-better), sorted by x."""
    v = sorted(((p['x'], p['y']) for p in pts if p['valid']), key=lambda t: (-t[0], -t[1]))
    out, best = [], float('-inf')
    for x, y in v:
        if y > best:
            out.append((x, y))
            best = y
    return sorted(out)


def _sign(v):
    return (v > 0) - (v < 0)


def spline(k):
    """Steffen monotone cubic through knots k (sorted by x); returns f(x) -> y or None outside."""
    xs = [a for a, _ in k]
    ys = [b for _, b in k]
    n = len(xs)
    m = [0.0] * n
    if n == 2:
        s = (ys[1] - ys[0]) / (xs[1] - xs[0])
        m = [s, s]
    elif n > 2:
        h = [xs[i + 1] - xs[i] for i in range(n - 1)]
        s = [(ys[i + 1] - ys[i]) / h[i] for i in range(n - 1)]
        for i in range(1, n - 1):
            p = (s[i - 1] * h[i] + s[i] * h[i - 1]) / (h[i - 1] + h[i])
            m[i] = (_sign(s[i - 1]) + _sign(s[i])) * min(abs(s[i - 1]), abs(s[i]), 0.5 * abs(p))
        m[0] = (3 * s[0] - m[1]) / 2
        m[n - 1] = (3 * s[n - 2] - m[n - 2]) / 2

    def ev(x):
        if n == 0 or x < xs[0] or x > xs[-1]:
            return None
        if n == 1:
            return ys[0]
        i = max(1, min(n - 1, sum(1 for v in xs if v <= x))) - 1
        hh = xs[i + 1] - xs[i]
        t = (x - xs[i]) / hh
        t2, t3 = t * t, t * t * t
        v = ((2 * t3 - 3 * t2 + 1) * ys[i] + (t3 - 2 * t2 + t) * hh * m[i]
             + (-2 * t3 + 3 * t2) * ys[i + 1] + (t3 - t2) * hh * m[i + 1])
        return max(v, 0.0)
    return ev


def band_check(ka, kb, kc):
    """The tested frontier kc against the band of ka and kb over their x overlap:
    (inside fraction, missing fraction, (lo, hi), band widths, outside stretches)."""
    a, b, c = spline(ka), spline(kb), spline(kc)
    lo, hi = max(ka[0][0], kb[0][0]), min(ka[-1][0], kb[-1][0])
    if hi < lo:
        return None
    n = SAMPLES if hi > lo else 1
    inside = missing = 0
    widths, outs = [], []
    for s in range(n):
        x = lo + (hi - lo) * (s + 0.5) / n if n > 1 else lo
        ya, yb, yc = a(x), b(x), c(x)
        band = (min(ya, yb), max(ya, yb))
        widths.append(band[1] / band[0] - 1 if band[0] > 0 else float('inf'))
        if yc is None:
            missing += 1
            outs.append((x, None))
        elif band[0] <= yc <= band[1]:
            inside += 1
        else:
            outs.append((x, (yc - band[1]) / band[1] if yc > band[1] else (yc - band[0]) / band[0]))
    stretches = []
    step = (hi - lo) / n if n > 1 else 0
    for x, d in outs:
        if stretches and x - stretches[-1][1] <= 1.5 * step:
            stretches[-1][1] = x
            stretches[-1][2] += 1
            if d is not None and (stretches[-1][3] is None or abs(d) > abs(stretches[-1][3])):
                stretches[-1][3] = d
        else:
            stretches.append([x, x, 1, d])
    return inside / n, missing / n, (lo, hi), sorted(widths), stretches


def frontier_match(full, found, tol=0.03):
    """runner::adaptive::frontier_match: (within, worst gap, missing) over the full frontier's range."""
    a, b = spline(full), spline(found)
    lo, hi = full[0][0], full[-1][0]
    n = SAMPLES if hi > lo else 1
    within = missing = 0
    worst = 0.0
    for s in range(n):
        x = lo + (hi - lo) * (s + 0.5) / n if n > 1 else lo
        w, g = a(x), b(x)
        if w is None or g is None:
            missing += 1
            continue
        gap = abs(g / w - 1) if w > 0 else (0.0 if g == 0 else float('inf'))
        worst = max(worst, gap)
        within += gap <= tol
    return within / n, worst, missing / n


def selftest():
    """The Steffen spline's worked values of core::analytics::spline's test."""
    ev = spline([(1.0, 1.0), (2.0, 3.0), (3.0, 4.0)])
    assert ev(1.5) == 2.09375 and ev(2.5) == 3.59375 and ev(3.0) == 4.0 and ev(3.001) is None
    assert spline([(1.0, 1.0), (3.0, 5.0)])(2.0) == 3.0
    assert knots([dict(valid=True, x=1, y=5), dict(valid=True, x=2, y=4),
                  dict(valid=True, x=1.5, y=3), dict(valid=False, x=9, y=9)]) == [(1, 5), (2, 4)]
    print('selftest ok')


def main():
    if '--selftest' in sys.argv:
        selftest()
        return 0
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) != 3:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    ykey = 'output' if '--y=output' in sys.argv else 'total'
    names = ('full A', 'full B', 'adaptive')
    P, K = {}, {}
    print(f'x = median interactivity (tok/s/user), y = {ykey} tok/s per GPU')
    for name, d in zip(names, args):
        try:
            with open(os.path.join(d, 'sweep.json')) as f:
                sw = json.load(f)
        except (OSError, ValueError) as e:
            print(f'{d}: no readable sweep.json ({e})', file=sys.stderr)
            return 2
        P[name] = points(d, ykey)
        K[name] = knots(P[name])
        ad = sw.get('adaptive') or {}
        extra = (f', measured {ad.get("measured_points")} of {ad.get("listed_points")} listed in '
                 f'{ad.get("rounds")} rounds, full-list estimate {ad.get("full_list_gpu_seconds")} '
                 f'GPU-s, saved_fraction {ad.get("saved_fraction")}') if ad else ''
        gs = sw.get('gpu_seconds')
        gs = f'{gs:.1f}' if isinstance(gs, (int, float)) else 'none'
        print(f'== {name} ({d}): gpu_seconds {gs}, points {len(P[name])} '
              f'({sum(p["valid"] for p in P[name])} valid){extra}')
        print('   frontier knots (x, y):', ', '.join(f'({x:.2f}, {y:.1f})' for x, y in K[name]))
    if not K['full A'] or not K['full B']:
        print('a full sweep has no valid point: no spread to test against')
        return 1
    ok = True
    for tested, (p, q) in ((2, (0, 1)), (0, (1, 2)), (1, (0, 2))):
        t = names[tested]
        if not K[t]:
            print(f'== {t}: no valid point')
            ok = ok and tested != 2
            continue
        r = band_check(K[names[p]], K[names[q]], K[t])
        if r is None:
            print(f'== {t} against {names[p]} / {names[q]}: their frontiers do not overlap in x')
            ok = ok and tested != 2
            continue
        inside, missing, (lo, hi), widths, stretches = r
        passes = inside >= PASS_FRACTION
        print(f'== {t} against the band of {names[p]} / {names[q]} over x {lo:.2f}..{hi:.2f}: '
              f'inside over {100 * inside:.1f} %, missing over {100 * missing:.1f} % '
              f'(pass at {100 * PASS_FRACTION:.0f} %: {"yes" if passes else "no"}); band width '
              f'(max/min - 1) median {100 * widths[len(widths) // 2]:.1f} %, '
              f'min {100 * widths[0]:.1f} %, max {100 * widths[-1]:.1f} %')
        for a, b, cnt, d in stretches:
            where = 'missing' if d is None else f'worst {100 * d:+.1f} % off the band'
            print(f'   outside: x {a:.2f}..{b:.2f} ({100 * cnt / len(widths):.1f} % of the overlap), {where}')
        if tested == 2:
            ok = passes
    for f, o in (('full A', 'full B'), ('full B', 'full A'), ('full A', 'adaptive'), ('full B', 'adaptive')):
        if K[f] and K[o]:
            w, worst, miss = frontier_match(K[f], K[o])
            print(f'   frontier_match({f} -> {o}): within 3 % over {100 * w:.1f} %, '
                  f'worst gap {100 * worst:.1f} %, missing {100 * miss:.1f} %')
    idx = {n: {(p.get('ep'), p.get('conc')): p for p in P[n] if p['valid']} for n in names}
    keys = sorted(set().union(*idx.values()), key=lambda k: (k[0] or 0, k[1] or 0))
    print('== points: x (A / B / adaptive), y (A / B / adaptive), A-B spread |A/B - 1|')
    for k in keys:
        a, b, c = (idx[n].get(k) for n in names)
        def f(p, key):
            return f'{p[key]:7.2f}' if p else '      -'
        line = (f'   ep{k[0]} conc{k[1]:>3}: x {f(a, "x")} {f(b, "x")} {f(c, "x")}'
                f'   y {f(a, "y")} {f(b, "y")} {f(c, "y")}')
        if a and b:
            line += (f'   spread x {100 * abs(a["x"] / b["x"] - 1):5.1f} % '
                     f'y {100 * abs(a["y"] / b["y"] - 1):5.1f} %')
        if c and c.get('prompts_used'):
            line += f'   prompts_used {c["prompts_used"]}'
        print(line)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
