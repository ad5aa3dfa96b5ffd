"""Kernel names for people: a short name, and the kind of work a kernel does.

short_name() keeps the function's own name: no return type, namespaces,
template arguments or parameters (`void at::native::vectorized_elementwise_
kernel<4, ...>(...)` -> `vectorized_elementwise_kernel`); a generic wrapper
(`cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>`) is named by
what it wraps. kind() sorts a kernel into one of KINDS by its name, by the
first rule of RULES that matches (docs/report.md lists them); copies,
memsets and idle gaps are timeline records, not kernels, and have kinds of
their own.
"""
import re

GEMM = "GEMM and convolution"
ATTENTION = "attention"
REDUCTION = "reduction and normalisation"
ELEMENTWISE = "elementwise"
COMMUNICATION = "communication"
OTHER = "other kernels"
COPY = "copies"
MEMSET = "memsets"
IDLE = "idle gaps"
KINDS = [GEMM, ATTENTION, REDUCTION, ELEMENTWISE, COMMUNICATION, OTHER, COPY, MEMSET, IDLE]

# Case-insensitive; the first rule that matches the short name wins, else the first that
# matches the full name (template arguments name functors: `normal_and_transform` is
# no normalisation). Attention comes before GEMM (flash kernels are GEMMs inside); GEMM
# before reduction (cuBLAS's split-K reduction and cuDNN's ReduceSplitK finish a GEMM or a
# convolution).
RULES = [
    (COMMUNICATION, r"^nccl|allreduce|allgather|reduce_?scatter|all_?to_?all"),
    (ATTENTION, r"flash|fmha|attention|attn|_mha_|sdpa"),
    (GEMM, r"gemm|conv|dgrad|wgrad|fprop|splitk|cublas|matmul|xmma|hmma|wgmma"),
    (REDUCTION, r"reduce|norm|gammabeta|bn_(fw|bw)|softmax|nll_loss|cross_entropy|pool|argmax|argmin|"
                r"cumsum|scan|topk|sort"),
    (ELEMENTWISE, r"elementwise|multi_tensor_apply|fill|dropout|copy|nchwtonhwc|nhwctonchw|"
                  r"transpose|scalepackedtensor|index|cat_|gather|scatter"),
]
_RULES = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in RULES]
# Wrappers named by the first template argument: cutlass::Kernel<Op>, cutlass::Kernel2<Op>.
WRAPPERS = {"Kernel", "Kernel2", "device_kernel"}


def kind(name):
    """The kind of a kernel, from its name (mangled, demangled or short)."""
    for text in (short_name(name), name):
        for k, pattern in _RULES:
            if pattern.search(text):
                return k
    return OTHER


def short_name(name):
    """The kernel's own name, without namespaces, template arguments or parameters."""
    name = name.strip()
    if name.startswith("_Z"):
        return _short_mangled(name)
    name = name.replace("(anonymous namespace)", "anonymous_namespace")
    outer, first_arg = _top_level(name)
    base = outer.split()[-1] if outer.split() else outer  # drops a return type
    base = base.split("::")[-1] or name
    if base in WRAPPERS and first_arg:
        return short_name(first_arg)
    return base


def _top_level(name):
    """The text outside any <...>, (...) or {...}, and the first template argument."""
    depth, outer, first, arg = 0, [], None, []
    for c in name:
        if c in "<({":
            depth += 1
            if depth == 1:
                arg = []
                continue
        elif c in ">)}":
            depth -= 1
            if depth == 0 and first is None and c == ">":
                first = "".join(arg)
            if depth <= 0:
                depth = 0
                continue
        if depth == 0:
            outer.append(c)
        elif depth == 1 and first is None and c == ",":
            first = "".join(arg)
        elif first is None:
            arg.append(c)
    return "".join(outer).strip(), (first or "").strip()


def _short_mangled(name):
    """The last identifier of an Itanium nested name (_ZN...), or of its first
    template argument when the name is a wrapper; the name itself when unreadable."""
    ids, i = [], 2
    if name[i:i + 1] == "N":
        i += 1
    while i < len(name):
        if name[i] == "S":  # a substitution: S_, S0_, ... names an earlier prefix
            end = name.find("_", i)
            if end < 0:
                break
            i = end + 1
            continue
        m = re.match(r"\d+", name[i:])
        if not m:
            if name[i] == "I" and ids and ids[-1] in WRAPPERS:
                inner = _short_mangled("_Z" + name[i + 1:])
                return inner if inner != "_Z" + name[i + 1:] else ids[-1]
            break
        n = int(m.group())
        i += len(m.group())
        ids.append(name[i:i + n])
        i += n
    return ids[-1] if ids else name


def record_kind(category):
    """The kind of a timeline record that is not a kernel ("memcpy", "memset"); None
    for a kernel or anything else."""
    return {"memcpy": COPY, "memset": MEMSET}.get(category)
