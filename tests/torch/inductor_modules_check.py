#!/usr/bin/env python3
"""The comment lines torch::Aten adds to a compiled kernel (the nn.Module of the FX nodes it
fuses, the frames of the code that made them), computed by the Python that
include/pasta/torch/detail/inductor_bridge.hpp runs inside the program, on the FX graphs
PyTorch's own AOTAutograd hands a compiler (forward and backward) on CPU. Each module here
computes with an operator no other module uses, so which module a node belongs to is known
from its target alone, and the lines are marked in this file.

Exit 0 when every check holds, 1 when one fails, 77 (skipped) without PyTorch 2.x."""
import os
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
import checks  # noqa: E402
from checks import expect  # noqa: E402
from modules_check import marked_lines  # noqa: E402

try:
    import torch
    from torch import nn
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
except ImportError as e:
    print(f"skipped: PyTorch with torch._dynamo is not importable here ({e})")
    sys.exit(77)


class A(nn.Module):
    def forward(self, x):
        return torch.sin(x)  # line: a


class C(nn.Module):
    def forward(self, x):
        return torch.cos(x)  # line: c


class B(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = C()

    def forward(self, x):
        return self.c(x) * 3.0  # line: b


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = A()
        self.b = B()

    def forward(self, x):
        x = self.b(self.a(x))  # line: net
        return torch.exp(x).sum()  # line: root


def step(model, x):
    return model(x)  # line: step


def bridge_namespace():
    """The Python source inside inductor_bridge.hpp, run as the program would run it."""
    with open(os.path.join(ROOT, "include", "pasta", "torch", "detail", "inductor_bridge.hpp")) as f:
        text = f.read()
    source = text[text.index('R"PY(') + len('R"PY('):text.index(')PY"')]
    ns = {}
    exec(compile(source, "inductor_bridge.hpp", "exec"), ns)
    return ns


def graphs_of(fn, *args):
    """The forward and backward FX graphs AOTAutograd makes of fn (both run eagerly)."""
    seen = []

    def keep(gm, _inputs):
        seen.append(gm.graph)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=aot_autograd(fw_compiler=keep, bw_compiler=keep))
    compiled(*args).backward()
    return seen


def main():
    ns = bridge_namespace()
    describe = ns["describe_nodes"]
    lines = marked_lines(HERE)

    expect("module_parts of an attribute path", ns["module_parts"]("L['self'].h.0.ln"),
           ["h", "0", "ln"])
    expect("module_parts of a _modules path", ns["module_parts"]("L['self']._modules['h']['0']"),
           ["h", "0"])
    expect("module_parts of no local", ns["module_parts"]("self.h"), None)

    # Which module computes with which operator, and the line that calls it.
    forward = {"aten.sin.default": ("a", "A", "a"), "aten.cos.default": ("b.c", "C", "c"),
               "aten.mul.Tensor": ("b", "B", "b"), "aten.exp.default": ("", "", "root")}
    # In the backward graph: d sin = cos (module a), d cos = -sin (module b.c).
    backward = {"aten.cos.default": ("a", "A", "a"), "aten.sin.default": ("b.c", "C", "c")}

    def fields(text):
        module = dict(f.split("=", 1) for f in text.splitlines()[0].split(": ", 1)[1].split())
        frames = text.splitlines()[1].split(": ", 1)[1].split(";") if "\n" in text else []
        return module, frames

    def check_graph(label, graph, table, root):
        found = set()
        for node in graph.nodes:
            target = str(node.target)
            if node.op != "call_function" or target not in table:
                continue
            path, cls, line = table[target]
            module, frames = fields(describe([node]))
            want_root = root if root else ""
            want_class = cls if path else (root or "")
            expect(f"{label} {target}: module", (module["root"], module["path"], module["class"]),
                   (want_root, path, want_class))
            expect(f"{label} {target}: innermost frame", frames[:1], [f"{HERE}:{lines[line]}"])
            found.add(target)
        expect(f"{label}: the operators the model computes with are in the graph", sorted(found),
               sorted(table))

    x = torch.randn(8, 4, requires_grad=True)
    model = Net()
    fw, bw = graphs_of(model, x)
    check_graph("compiled module, forward", fw, forward, "")
    check_graph("compiled module, backward", bw, backward, "")

    # Nodes of two modules: their common module; of a module and the compiled frame: that frame.
    def nodes(graph, target):
        return [n for n in graph.nodes if str(n.target) == target]
    both = nodes(fw, "aten.cos.default") + nodes(fw, "aten.mul.Tensor")
    expect("nodes of b.c and b together", fields(describe(both))[0]["path"], "b")
    expect("their frames: the first node's", fields(describe(both))[1][:1], [f"{HERE}:{lines['c']}"])
    mixed = nodes(fw, "aten.sin.default") + nodes(fw, "aten.exp.default")
    expect("nodes of a and of the compiled frame's own code", fields(describe(mixed))[0]["path"], "")
    expect("nodes without metadata describe nothing", describe([object()]), "")
    # A backward graph's node that names no module (neither key: a graph pass made it) does
    # not take the common module up to the root; the compiled frame's own backward nodes
    # (fwd_nn_module_stack None) still do.
    made_later = types.SimpleNamespace(meta={}, op="call_function", target="aten.view.default")
    b_grad = [n for n in bw.nodes if (n.meta.get("fwd_nn_module_stack") or {}) and
              fields(describe([n]))[0]["path"] == "b"]
    own_code = [n for n in bw.nodes if "fwd_nn_module_stack" in n.meta and
                n.meta["fwd_nn_module_stack"] is None]
    expect("a backward node of b with one that names no module: b",
           fields(describe(b_grad[:1] + [made_later]))[0]["path"], "b")
    expect("a backward node of b with one of the compiled frame's own code: the root",
           fields(describe(b_grad[:1] + own_code[:1]))[0]["path"], "")
    traced = types.SimpleNamespace(meta={"stack_trace": f'File "{HERE}", line 7'}, op="call_function",
                                   target="aten.view.default")
    expect("a forward node without nn_module_stack (the compiled frame's own code): the root",
           fields(describe([traced]))[0]["path"], "")
    # An extern kernel's own node: the one whose operator it calls, not the others it holds.
    own = ns["own_nodes"]
    fallback = types.SimpleNamespace(op_overload="aten.sin.default")
    expect("an extern kernel: its own operator's node", fields(describe(own(fallback, mixed)))[0]["path"],
           "a")
    product = types.SimpleNamespace(python_kernel_name="extern_kernels.mm")
    expect("an extern kernel none of whose nodes is its operator: every node",
           own(product, mixed), mixed)

    # A function compiled with the model as its argument: the model is the root, by class.
    fw, bw = graphs_of(step, model, x)
    check_graph("compiled function, forward", fw, forward, "Net")
    check_graph("compiled function, backward", bw, backward, "Net")

    return checks.summary("every check held")


if __name__ == "__main__":
    sys.exit(main())
