#!/usr/bin/env python3
"""docs_code_block.py DOC SOURCE: exits 0 if DOC shows SOURCE whole in a ```cpp block."""
import sys

doc, src = (open(p).read() for p in sys.argv[1:3])
if "```cpp\n" + src + "```" not in doc:
    sys.exit(f"{sys.argv[1]}: its code block differs from {sys.argv[2]}; paste the file again")
