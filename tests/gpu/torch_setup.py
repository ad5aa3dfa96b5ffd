"""What the PyTorch GPU tests' scripts share: reproducible results."""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # reproducible cuBLAS

import torch  # noqa: E402


def deterministic(seed=0):
    """CUDA initialised first (so `pasta run --torch`, which starts at cuInit, and
    torch.profiler see the same span), one seed, deterministic algorithms."""
    torch.cuda.init()
    torch.manual_seed(seed)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)
