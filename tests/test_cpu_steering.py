"""``.ci/run``'s second step emulates an AVX2-only CPU (issue 52, issue 63): every library that picks its
kernels by the CPU must really run its AVX2 code there, or the step checks nothing. Issue 63: that step steered
torch only, and a real AVX2-only CPU then failed two tests it had passed (numpy's OpenBLAS and FAISS picked
their AVX-512 kernels in CI). Run by that step (its variables set); skipped in a run without them."""
import os

import pytest

STEERED = os.environ.get("OPENBLAS_CORETYPE") == "Haswell"
pytestmark = pytest.mark.skipif(not STEERED, reason="checks .ci/run's emulated-AVX2 step (OPENBLAS_CORETYPE=Haswell)")


def test_every_blas_runs_its_haswell_kernels():
    """numpy's, scipy's and faiss-cpu's own OpenBLAS (three copies in three wheels)."""
    import faiss  # noqa: F401 - loads its OpenBLAS
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    blas = {i["filepath"].rsplit("/", 1)[-1]: i.get("architecture") for i in threadpool_info()
            if i["internal_api"] == "openblas"}
    assert len(blas) >= 3, blas
    assert set(blas.values()) == {"Haswell"}, blas


def test_faiss_numpy_and_torch_dispatch_to_avx2_at_most():
    import faiss
    import torch
    from numpy._core._multiarray_umath import __cpu_features__

    assert faiss.SIMDConfig.get_level_name() == "AVX2"
    assert torch.backends.cpu.get_cpu_capability() == "AVX2"
    assert not any(v for k, v in __cpu_features__.items() if k in ("AVX512F", "AVX512_SKX", "AVX512_ICL", "AVX512_SPR"))
