#!/usr/bin/env python3
"""op_profile_test.py PASTA_TRACE TRACE OUT SCHEMA: replays a trace with kernel
counters, and checks op_counters.profile.json against the published schema
and against the values the trace implies."""
import json
import os
import subprocess
import sys

import jsonschema

pasta_trace, trace, out, schema_path = sys.argv[1:5]
# The trace's counters say they were measured under CUPTI's kernel replay
# (KernelCounters::l2_warm_replay).
subprocess.run([pasta_trace, "replay", trace, "-o", out], check=True,
               env={**os.environ, "PASTA_PRINT": "none"})
with open(os.path.join(out, "op_counters.profile.json")) as f:
    doc = json.load(f)
with open(schema_path) as f:
    jsonschema.validate(doc, json.load(f))

# Three launches of one GEMM under aten::linear/aten::addmm, the first
# measured; a vecAdd outside every operator, never measured.
MiB = 1 << 20
op, relu = doc["operators"]
assert op["path"] == "aten::linear/aten::addmm", op["path"]
assert (op["launches"], op["measured"], op["propagated"]) == (3, 1, 2), op
assert op["device_ns"] == 1200, op["device_ns"]
m = op["metrics"]
assert m["dram_bytes_read"] == 9 * MiB, m
assert m["dram_bytes_write"] == 3 * MiB, m
assert m["dram_throughput_pct"] == 71.5, m
assert m["flops"] == 3 * 6.4e9, m
assert abs(m["arithmetic_intensity"] - 3 * 6.4e9 / (12 * MiB)) < 1e-9, m
(k,) = op["kernels"]
assert k["grid"] == [132, 1, 1] and k["block"] == [384, 1, 1], k
# Launch indices, in launch order: the GEMM's three launches are 0-2, vecAdd 3, relu 4.
assert k["measured_launches"] == [0], k
assert relu["kernels"][0]["measured_launches"] == [4], relu["kernels"][0]
(outside,) = doc["unattributed"]
assert outside["kernel"] == "vecAdd" and outside["metrics"] is None, outside
# relu's one measurement collected the cache-sensitive metrics only: the
# others are null, as docs/op-profile.md says.
assert relu["path"] == "aten::relu", relu["path"]
r = relu["metrics"]
assert r["dram_bytes_read"] == MiB and r["l2_hit_rate_pct"] == 50, r
assert r["flops"] is None and r["arithmetic_intensity"] is None, r
assert relu["kernels"][0]["metrics"]["sm_throughput_pct"] is None, relu["kernels"][0]
# The GEMM's one measurement took 8 replay passes: its DRAM bytes are replay's.
assert doc["warnings"] == [
    "1 launches have no counters: no launch of their signature was measured",
    "1 signatures have DRAM bytes and hit rates measured under kernel replay only (no later "
    "launch measured in one pass): the memory the profiler saved and restored between passes "
    "was in L2 with them"], doc["warnings"]

# Documents that break the schema are refused (the schema is not vacuous).
def refused(broken, what):
    try:
        jsonschema.validate(broken, json.load(open(schema_path)))
    except jsonschema.ValidationError:
        return
    sys.exit("the schema accepted " + what)


refused(dict(doc, version="2.0"), "version 2.0")
text = json.loads(json.dumps(doc))
text["operators"][0]["metrics"]["flops"] = "many"
refused(text, "a metric that is text")
print("op_counters.profile.json follows docs/schema/op_profile.v1.json; values exact")
