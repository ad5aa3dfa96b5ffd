"""What the Python tests share: one line per check, and a count of the failed ones.

    sys.path.insert(0, <tests>); import checks
    checks.expect("launches", got, 3); ...; sys.exit(checks.summary("every check exact"))
"""
failures = 0


def expect(what, got, want):
    """got == want, said in one line; returns whether it held."""
    global failures
    ok = got == want
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got!r}" + ("" if ok else f" (expected {want!r})"))
    return ok


def summary(passed):
    """The exit status: 1 after a line counting the failed checks, or 0 after `passed` (the
    line a test's ctest expectation waits for)."""
    if failures:
        print(f"{failures} checks failed")
        return 1
    print(passed)
    return 0


def near(what, got, want, tol=1e-6):
    """|got - want| <= tol, said in one line; returns whether it held."""
    global failures
    ok = isinstance(got, (int, float)) and abs(got - want) <= tol
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got!r}" + ("" if ok else f" (expected {want!r})"))
    return ok


def union_us(spans):
    """Length of the union of (start, end) intervals: the independent truth the tests hold
    timelines' busy time and overlaps to."""
    total, end = 0.0, None
    for s, t in sorted(spans):
        if end is None or s > end:
            total, end = total + t - s, t
        elif t > end:
            total, end = total + t - end, t
    return total
