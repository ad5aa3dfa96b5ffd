#!/bin/sh
# The header checks' compiler launcher: runs the compile command it is given, which carries
# -fsyntax-only (a check needs the compiler's verdict, not code: a third to a half less time),
# then leaves the empty object file the build expects, so the check is not run again until a
# header it reads changes.
out=
prev=
for arg in "$@"; do
  if [ "$prev" = "-o" ]; then out=$arg; fi
  prev=$arg
done
"$@" && : > "$out"
