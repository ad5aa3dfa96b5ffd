"""A job's per-rank tables in Parquet, and the job's analyses as DuckDB queries over them.

ingest() reads every rank's timeline.trace.json, kernel_freq.json and op_summary.json once,
inside DuckDB (never as Python objects: a job of thousands of ranks holds tens of millions
of records), and writes the job's tables, each with a `rid` column naming the process
(tables/processes.parquet maps it to rank, host and directory):

  tables/device.parquet     kernels, copies, memsets and host launches on the job's clock (us)
  tables/kernels.parquet    each process's kernel_freq rows
  tables/operators.parquet  each process's op_summary rows (pipelines with --torch)

The same files serve Dask or Spark when a job outgrows one machine (docs/user-guide.md,
"Jobs"). The analyses follow Holistic Trace Analysis: per process the time partitioned
into compute, communication not overlapped with compute, memory copies and idle; the
communication that compute overlaps; idle gaps by cause; kernel launch delays; NCCL
collectives matched across ranks (per process group, by sequence), with which rank
arrived last and how long the others waited.
"""
import json
import os
import shutil

try:
    import duckdb
except ImportError:  # the job's tables and analyses need it; the launcher says so in one line
    duckdb = None

MISSING = ("the job's analyses need DuckDB, which is not installed here "
           "(pip install duckdb)")
# A device gap shorter than this is launch overhead (kernels follow one another as fast as
# the host launches them); a longer one is the host's or a dependency's (idle_by_cause).
LAUNCH_GAP_US = 10.0
# The sweep keys each record's time (ns) by its process in a BIGINT of this many bits; a job
# whose ranks times their span does not fit is swept a process at a time (slower).
KEY_BITS = 62
# What the tables hold of each record, by class: NCCL kernels are communication.
CLASS = ("CASE WHEN cat = 'kernel' AND (name LIKE 'nccl%' OR name LIKE 'void nccl%') "
         "THEN 'communication' WHEN cat = 'kernel' THEN 'compute' "
         "WHEN cat IN ('memcpy', 'memset') THEN 'memory' END")
# A timeline as the timeline tool writes it, one event a line, its fields in one order (name,
# cat, ph, pid, tid, ts, dur, args), read by DuckDB's CSV reader split at each `,"`: a comma
# then an unescaped quote, which no JSON string holds, so every split falls between two
# fields. Parsing each line as JSON took twice as long.
_FIELDS = 9
_LINES = ("read_csv(?, columns={" + ", ".join(f"'c{i}': 'VARCHAR'" for i in range(1, _FIELDS + 1)) +
          "}, header=false, delim=',\"', quote='', escape='', filename=true, auto_detect=false, "
          "strict_mode=false, null_padding=true, max_line_size=16777216)")


def available():
    return duckdb is not None


def timeline_header(path, limit=1 << 20):
    """(the header's "pasta" object, the clock at ts = 0 in ns, whether the file is whole)
    of a timeline, reading only its start and its last bytes; None where it has neither."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
            origin = None
            while origin is None:
                at = head.find(b'"name":"pasta_origin"')
                if at >= 0 and head.find(b"\n", at) >= 0:
                    line = head[head.rfind(b"\n", 0, at) + 1:head.find(b"\n", at)]
                    origin = json.loads(line.rstrip(b",")).get("args", {}).get("clock_ns")
                    break
                more = f.read(65536)
                if not more or len(head) > limit:
                    break
                head += more
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16))
            whole = f.read().rstrip().endswith(b"]}")
    except (OSError, ValueError):
        return None
    first = head.split(b"\n", 1)[0]
    whole = whole and first.rstrip().endswith(b"[")  # else: not one event a line
    at = first.find(b'"pasta":')
    if at < 0 or origin is None:
        return None
    try:
        header, _ = json.JSONDecoder().raw_decode(first[at + 8:].decode())
    except ValueError:
        return None
    if "clock_ns" not in header or "wall_ns" not in header:
        return None
    return header, origin, whole


class Store:
    """The job's tables under out_dir/tables and a DuckDB connection that queries them."""

    def __init__(self, out_dir):
        self.dir = os.path.join(out_dir, "tables")
        os.makedirs(self.dir, exist_ok=True)
        self.con = duckdb.connect()
        # Bounded whatever the job's size: DuckDB spills to disk past this.
        self.con.execute(f"SET memory_limit = '{os.environ.get('PASTA_JOB_MEMORY', '1GB')}'")
        self.con.execute(f"SET temp_directory = '{self._path('.spill')}'")
        self.con.execute("SET preserve_insertion_order = false")
        self.con.execute("SET enable_progress_bar = false")

    def _path(self, name):
        return os.path.join(self.dir, name).replace("'", "''")

    def table(self, name):
        return f"read_parquet('{self._path(name + '.parquet')}')"

    def query(self, sql, params=None):
        cur = self.con.execute(sql, params or [])
        columns = [d[0] for d in cur.description]
        return [dict(zip(columns, row)) for row in cur.fetchall()]

    def _copy(self, name, select, params=None):
        tmp = self._path(name + ".parquet.tmp")
        self.con.execute(f"COPY ({select}) TO '{tmp}' (FORMAT parquet)", params or [])
        os.replace(tmp.replace("''", "'"), os.path.join(self.dir, name + ".parquet"))

    def ingest(self, processes):
        """processes: dicts with rid, label, rank, host, pid, dir. Writes the tables; returns
        {rid: [problem, ...]} for files that could not be read whole."""
        problems = {}
        self._copy("processes", "SELECT * FROM (VALUES " + ", ".join(
            "(?, ?, ?, ?, ?, ?)" for _ in processes) + ") AS t(rid, label, rank, host, pid, dir)"
            if processes else "SELECT 0 AS rid, '' AS label, 0 AS rank, '' AS host, 0 AS pid, "
            "'' AS dir WHERE false",
            [v for p in processes for v in (p["rid"], p["label"], p["rank"], p["host"], p["pid"],
                                            p["dir"])])
        self._ingest_timelines(processes, problems)
        self._ingest_reports(processes, problems, "kernel_freq", "kernels", "kernels",
                             "kernel VARCHAR, signature VARCHAR, launches BIGINT, total_ms DOUBLE")
        self._ingest_reports(processes, problems, "op_summary", "operators", "operators",
                             "operator VARCHAR, calls BIGINT, kernels BIGINT, "
                             "device_self_ms DOUBLE")
        return problems

    def _ingest_timelines(self, processes, problems):
        """Each timeline's device records and host launches, shifted onto the job's clock:
        processes of a host share its clock; hosts are lined up through their wall clocks
        (the first timeline of a host sets its offset)."""
        per_host, files = {}, []
        for p in processes:
            path = os.path.join(p["dir"], "timeline.trace.json")
            if not os.path.exists(path):
                continue
            found = timeline_header(path)
            if found is None:
                problems.setdefault(p["rid"], []).append(
                    "timeline.trace.json has no header or clock reading: left out of the "
                    "timeline analyses")
                continue
            header, origin, whole = found
            if not whole:
                path, whole = self._one_event_a_line(path, p["rid"])
            offset = per_host.setdefault(p["host"], header["wall_ns"] - header["clock_ns"])
            files.append((os.path.abspath(path), p["rid"], origin + offset))
            if not whole:
                problems.setdefault(p["rid"], []).append(
                    "timeline.trace.json is cut short (the process died while writing it?): "
                    "its analyses cover the events written")
        self.host_offsets = per_host
        self.origin_ns = min((f[2] for f in files), default=0)
        self.files = {rid: path for path, rid, _ in files}
        self.con.execute("CREATE OR REPLACE TEMP TABLE timeline_files (file VARCHAR, rid INTEGER, "
                         "shift_us DOUBLE)")
        if files:
            self.con.executemany("INSERT INTO timeline_files VALUES (?, ?, ?)",
                                 [(f, rid, (wall - self.origin_ns) / 1e3)
                                  for f, rid, wall in files])
        paths = [f[0] for f in files] or ["/dev/null"]
        # c1 is {"name":"..." (its JSON escapes undone only where it has one), c2 "cat":"...",
        # c6 ts":..., c7 dur":... (or a launch's args); the correlation is in the args. A line
        # cut in two (a file written half) lacks the fields after its cut: dropped, and a
        # correlation cut short is none.
        self._copy("device", f"""
            WITH l AS MATERIALIZED (
                SELECT filename, substr(c2, 7, length(c2) - 7) AS cat, c1, c4, c5, c6, c7, c8,
                       c9 FROM {_LINES}
                WHERE c2 IN ('cat":"kernel"', 'cat":"memcpy"', 'cat":"memset"', 'cat":"launch"')
                  AND c1 LIKE '{{"name":"%' AND c7 IS NOT NULL
                  AND (c2 = 'cat":"launch"' OR c8 IS NOT NULL))
            SELECT f.rid, cat,
                   CASE WHEN contains(c1, '\\') THEN json_extract_string(substr(c1, 9), '$')
                        ELSE substr(c1, 10, length(c1) - 10) END AS name,
                   TRY_CAST(substr(c4, 6) AS INTEGER) - 1 AS device,
                   TRY_CAST(substr(c5, 6) AS BIGINT) AS stream,
                   TRY_CAST(substr(c6, 5) AS DOUBLE) + f.shift_us AS start_us,
                   TRY_CAST(substr(c6, 5) AS DOUBLE) + f.shift_us +
                     CASE WHEN cat = 'launch' THEN 0 ELSE TRY_CAST(substr(c7, 6) AS DOUBLE) END
                     AS end_us,
                   TRY_CAST(regexp_extract(concat(c7, c8, c9), 'correlation":(\\d+)[^\\d]', 1)
                            AS BIGINT) AS correlation
            FROM l JOIN timeline_files f ON l.filename = f.file
            WHERE TRY_CAST(substr(c6, 5) AS DOUBLE) IS NOT NULL
              AND (cat = 'launch' OR TRY_CAST(substr(c7, 6) AS DOUBLE) IS NOT NULL)""", [paths])
        shutil.rmtree(os.path.join(self.dir, ".lines"), ignore_errors=True)

    def _one_event_a_line(self, path, rid):
        """A timeline not as the timeline tool writes it (on one line, or cut short), read
        whole in Python and written one event a line: (that file, whether it was whole)."""
        with open(path) as f:
            text = f.read()
        try:
            events, whole = json.loads(text).get("traceEvents", []), True
        except (ValueError, AttributeError):
            lines = [l.rstrip(",") for l in text.split("\n")[1:]]
            events, whole = [], False
            for line in lines:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    continue
        out = os.path.join(self.dir, ".lines", f"{rid}.trace.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write('{"traceEvents":[\n')
            for e in events:
                if isinstance(e, dict) and e:
                    f.write(json.dumps(e, separators=(",", ":")) + ",\n")
            f.write("{}]}\n")
        return out, whole

    def _ingest_reports(self, processes, problems, tool, table, name, columns):
        """One table of each process's <tool>.json; a file that is not whole JSON is named."""
        paths = {os.path.abspath(os.path.join(p["dir"], tool + ".json")): p["rid"]
                 for p in processes if os.path.exists(os.path.join(p["dir"], tool + ".json"))}
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name}_files (file VARCHAR, rid INTEGER)")
        if paths:
            self.con.executemany(f"INSERT INTO {name}_files VALUES (?, ?)", list(paths.items()))

        select = (f"SELECT f.rid, r.* EXCLUDE (filename) FROM (SELECT filename, "
                  f"unnest(tables.{table}, recursive := true) FROM read_json(?, columns="
                  f"{{'tables': 'STRUCT({table} STRUCT({columns})[])'}}, filename=true, "
                  f"format='unstructured', maximum_object_size=67108864)) r "
                  f"JOIN {name}_files f ON r.filename = f.file")
        if paths:
            try:
                self._copy(name, select, [list(paths)])
                return
            except duckdb.Error:
                pass  # one file spoils the batch: find it
        good = []
        for path, rid in paths.items():
            try:
                self.con.execute(f"SELECT count(*) FROM ({select})", [[path]]).fetchall()
                good.append(path)
            except duckdb.Error:
                problems.setdefault(rid, []).append(
                    f"{tool}.json is not whole JSON (cut short?): left out of the {name} over "
                    "processes")
        if good:
            self._copy(name, select, [good])
        else:  # the table's columns, no row
            empty = ", ".join(f"NULL::{c.split()[1]} AS {c.split()[0]}"
                              for c in columns.split(", "))
            self._copy(name, f"SELECT NULL::INTEGER AS rid, {empty} WHERE false")

    # --- the analyses ---------------------------------------------------------------

    def _device(self):
        return f"(SELECT *, {CLASS} AS class FROM {self.table('device')} WHERE cat <> 'launch')"

    def _sweep(self):
        """One pass over each process's device records by start: for each set of classes,
        the running end of the set's records so far, so that each record adds to the set's
        union what it reaches past that end, and starts a gap of the whole device's work
        where it starts past it. Times are whole ns keyed by process, (rid << bits) + ns
        since the job's first record, so that one order holds every process and DuckDB
        streams the running ends (3x faster than a window per process, which is what a job
        too long for the keys gets)."""
        if getattr(self, "_swept", False):
            return
        lo, hi, top = self.con.execute(
            f"SELECT floor(min(start_us)), max(end_us), max(rid) FROM {self._device()} "
            "WHERE class IS NOT NULL").fetchone()
        lo, hi, top = lo or 0.0, hi or 0.0, top or 0
        bits = (int((hi - lo) * 1000) + 2).bit_length()
        keyed = bits + (top + 1).bit_length() <= KEY_BITS
        shift = f"(rid::BIGINT << {bits})" if keyed else "0::BIGINT"
        window = "ORDER BY s, e" if keyed else "PARTITION BY rid ORDER BY s, e"

        def key(column):
            return f"{shift} + round(({column} - {lo}) * 1000)::BIGINT"
        # Communication is a few records a step: its own union is a query of its own; the
        # running ends of compute, compute with communication, and all work (each a
        # cumulative max, the costly part) share one sort.
        sets = {"compute": "class = 'compute'",
                "busy_cc": "class IN ('compute', 'communication')", "busy": "true"}

        def before(sets):  # the running end of the set's records before this one
            return ", ".join(f"max(e) FILTER (WHERE {c}) OVER (w ROWS BETWEEN UNBOUNDED "
                             f"PRECEDING AND 1 PRECEDING) AS before_{k}" for k, c in sets.items())

        def grow(sets):
            return ", ".join(
                f"sum(CASE WHEN {c} THEN greatest(0, e - greatest(s, coalesce(before_{k}, s))) "
                f"ELSE 0 END) / 1e3 AS {k}_us" for k, c in sets.items())

        def keyed_records(where, *more):  # only the columns used: the sort holds them all
            return (f"SELECT rid, {key('start_us')} AS s, {key('end_us')} AS e"
                    + "".join(f", {m}" for m in more) + f" FROM {self._device()} WHERE {where}")
        # Streamed into sums a process, never a table of every record (which spilled to disk).
        comm = {"communication": "true"}
        self.con.execute(f"""
            CREATE OR REPLACE TEMP TABLE unions AS
            WITH u AS (SELECT rid, {grow(sets)}, (max(e) - min(s)) / 1e3 AS span_us
                       FROM (SELECT *, {before(sets)}
                             FROM ({keyed_records('class IS NOT NULL', 'class')})
                             WINDOW w AS ({window}))
                       GROUP BY rid),
            cu AS (SELECT rid, {grow(comm)}
                   FROM (SELECT *, {before(comm)}
                         FROM ({keyed_records("class = 'communication'")}) WINDOW w AS ({window}))
                   GROUP BY rid)
            SELECT u.*, coalesce(cu.communication_us, 0) AS communication_us
            FROM u LEFT JOIN cu USING (rid)""")
        # The gaps: a record that starts past the end of all the work before it on its
        # process (not the last process's: a key from below the process's own).
        self.con.execute(f"""
            CREATE OR REPLACE TEMP TABLE gaps AS
            SELECT rid, correlation, (before_busy - {shift}) / 1e3 + {lo} AS gap_start_us,
                   (s - before_busy) / 1e3 AS gap_us
            FROM (SELECT *, {before({"busy": "true"})}
                  FROM ({keyed_records('class IS NOT NULL', 'correlation')})
                  WINDOW w AS ({window}))
            WHERE s > before_busy AND before_busy >= {shift}""")
        self._swept = True

    def breakdown(self):
        """Per process (rid): the union of its compute, communication and memory records
        partitioned by that priority (compute first, HTA's temporal breakdown), idle for the
        rest of its span, and the communication overlapped by compute (us)."""
        self._sweep()
        result = {}
        for u in self.query("SELECT * FROM unions"):
            span = u["span_us"]
            compute, comm = u["compute_us"], u["communication_us"]
            result[u["rid"]] = {
                "span_us": span, "busy_us": u["busy_us"], "compute_us": compute,
                "communication_us": u["busy_cc_us"] - compute,
                "memory_us": u["busy_us"] - u["busy_cc_us"],
                "idle_us": span - u["busy_us"], "comm_total_us": comm,
                "overlap_us": compute + comm - u["busy_cc_us"]}
        return result

    def idle_by_cause(self):
        """Per process: its device's idle gaps (before each record that starts past the end
        of all the work before it) by cause: launch overhead (shorter than LAUNCH_GAP_US),
        host (that record was launched after the gap began), dependency (launched before
        it: it waited on another stream, an event or a rank), or unknown (no launch times in
        the timeline)."""
        self._sweep()
        rows = self.query(f"""
            WITH l AS (SELECT rid, correlation, min(start_us) AS launched
                       FROM {self.table('device')} WHERE cat = 'launch' GROUP BY ALL),
            has AS (SELECT DISTINCT rid FROM l)
            SELECT gaps.rid, CASE
                     WHEN gap_us < {LAUNCH_GAP_US} THEN 'launch overhead'
                     WHEN has.rid IS NULL OR l.launched IS NULL THEN 'unknown'
                     WHEN l.launched >= gap_start_us THEN 'host'
                     ELSE 'dependency' END AS cause,
                   sum(gap_us) AS us, count(*) AS gaps
            FROM gaps LEFT JOIN l ON l.rid = gaps.rid AND l.correlation = gaps.correlation
                 LEFT JOIN has ON has.rid = gaps.rid
            GROUP BY ALL""")
        out = {}
        for r in rows:
            out.setdefault(r["rid"], {})[r["cause"]] = r["us"]
        return out

    def launch_delays(self):
        """Per process with host launch times: from each launch to its record's start (us)."""
        return {r["rid"]: r for r in self.query(f"""
            WITH l AS (SELECT rid, correlation, min(start_us) AS launched
                       FROM {self.table('device')} WHERE cat = 'launch' GROUP BY ALL)
            SELECT d.rid, count(*) AS launches, avg(d.start_us - l.launched) AS mean_us,
                   median(d.start_us - l.launched) AS median_us,
                   max(d.start_us - l.launched) AS max_us
            FROM {self._device()} d JOIN l USING (rid, correlation)
            WHERE d.class IS NOT NULL GROUP BY ALL""")}

    def collectives(self):
        """NCCL collectives matched across processes: a process's NCCL streams are numbered
        by first use (its process groups, in the order it first used them) and each stream's
        kernels by start (the sequence number every rank of a group shares). Returns (every
        collective of more than one process, in order, how many were matched, per process:
        how long it waited for the last rank in all and how often it was the last)."""
        self.con.execute(f"""
            CREATE OR REPLACE TEMP TABLE matched AS
            WITH c AS (SELECT rid, stream, name, start_us, end_us,
                              min(start_us) OVER (PARTITION BY rid, stream) AS first_use
                       FROM {self._device()} WHERE class = 'communication'),
            n AS (SELECT *, dense_rank() OVER (PARTITION BY rid ORDER BY first_use, stream)
                              AS grp,
                         row_number() OVER (PARTITION BY rid, stream ORDER BY start_us) AS seq
                  FROM c),
            k AS (SELECT grp, seq, max(start_us) AS last_arrival, min(start_us) AS first_arrival,
                         median(start_us) AS median_arrival,
                         first(rid ORDER BY start_us DESC, rid) AS last_rid,  -- ties: the first
                         count(*) AS processes, min(name) AS name, count(DISTINCT name) AS names,
                         max(end_us) AS ended
                  FROM n GROUP BY ALL)
            SELECT n.rid, n.grp, n.seq, n.start_us, k.* EXCLUDE (grp, seq)
            FROM n JOIN k USING (grp, seq)""")
        count = self.con.execute("SELECT count(DISTINCT (grp, seq)) FROM matched").fetchone()[0]
        every = self.query("""
            SELECT DISTINCT grp, seq, name, names, processes, last_rid,
                   last_arrival - first_arrival AS skew_us,
                   last_arrival - median_arrival AS behind_median_us,
                   ended - last_arrival AS after_last_us
            FROM matched WHERE processes > 1 ORDER BY grp, seq""")
        per = {r["rid"]: r for r in self.query("""
            SELECT rid, sum(last_arrival - start_us) AS wait_us,
                   count(*) FILTER (WHERE rid = last_rid AND processes > 1) AS last,
                   count(*) AS collectives
            FROM matched GROUP BY rid""")}
        return every, count, per

    def per_process(self):
        """Per process: device time (its kernels' total), compute (NCCL left out), the top
        kernel, and copies' and memsets' time from the timeline (ms)."""
        out = {r["rid"]: r for r in self.query(f"""
            SELECT rid, sum(total_ms) AS device_ms,
                   sum(total_ms) FILTER (WHERE NOT (kernel LIKE 'nccl%')) AS compute_ms,
                   first(coalesce(kernel, signature) ORDER BY total_ms DESC, kernel)
                     AS top_kernel
            FROM {self.table('kernels')} WHERE total_ms IS NOT NULL GROUP BY rid""")}
        for r in self.query(f"""
                SELECT rid, sum(end_us - start_us) FILTER (WHERE cat = 'memcpy') / 1e3 AS memcpy_ms,
                       sum(end_us - start_us) FILTER (WHERE cat = 'memset') / 1e3 AS memset_ms
                FROM {self.table('device')} GROUP BY rid"""):
            out.setdefault(r["rid"], {"rid": r["rid"]}).update(r)
        return out

    def kinds_by_kernel(self, rids, kind_of):
        """Per process in rids: device time (ms) per kind of kernel, kind_of(signature)."""
        names = [r["name"] for r in self.query(
            f"SELECT DISTINCT coalesce(signature, kernel) AS name FROM {self.table('kernels')}")]
        self.con.execute("CREATE OR REPLACE TEMP TABLE kinds (name VARCHAR, kind VARCHAR)")
        if names:
            self.con.executemany("INSERT INTO kinds VALUES (?, ?)",
                                 [(n, kind_of(n or "")) for n in names])
        out = {}
        for r in self.query(f"""
                SELECT k.rid, kinds.kind, sum(k.total_ms) AS ms
                FROM {self.table('kernels')} k
                     JOIN kinds ON coalesce(k.signature, k.kernel) = kinds.name
                WHERE k.rid IN (SELECT unnest(?::INTEGER[])) GROUP BY ALL""", [list(rids)]):
            out.setdefault(r["rid"], {})[r["kind"]] = r["ms"]
        return out

    def spread(self, table, key, value, labels):
        """Per name: value over the processes that have it (min, median, max, the process with
        the largest), largest max first."""
        rows = self.query(f"""
            WITH t AS (SELECT rid, {key} AS name, sum({value}) AS v FROM {self.table(table)}
                       WHERE {key} IS NOT NULL AND {value} IS NOT NULL GROUP BY ALL)
            SELECT name, count(*) AS processes, min(v) AS min, median(v) AS median, max(v) AS max,
                   first(rid ORDER BY v DESC, rid) AS slowest  -- ties: the first process
            FROM t GROUP BY name ORDER BY max DESC, name""")
        for r in rows:
            r["slowest"] = labels[r["slowest"]]
        return rows
