"""What the Python tests share: one line per check, and a count of the failed ones.

    sys.path.insert(0, <tests>); import checks
    checks.expect("launches", got, 3); ...; sys.exit(checks.summary())
"""
failures = 0


def expect(what, got, want):
    """got == want, said in one line; returns whether it held."""
    global failures
    ok = got == want
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got!r}" + ("" if ok else f" (expected {want!r})"))
    return ok


def near(what, got, want, tol=1e-6):
    """|got - want| <= tol, said in one line; returns whether it held."""
    global failures
    ok = isinstance(got, (int, float)) and abs(got - want) <= tol
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got!r}" + ("" if ok else f" (expected {want!r})"))
    return ok
