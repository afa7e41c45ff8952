"""x ** a over a whole array inside numba kernels, vectorized by glibc's vector math library.

numba compiles ``x[k] ** a`` in a loop to one scalar libm ``pow`` call per element: the llvmlite
on PyPI has no vector math library, so LLVM cannot vectorize it. A PER cycle raises 2 × B
numbers to a power (the new masses (|δ| + ε)^α and the IS weights (P / P_min)^-β), a large share
of the cycle at small N. `power` calls glibc's libmvec instead (``_ZGVeN8vv_pow``: 8 doubles per
call with AVX-512, ``_ZGVdN4vv_pow`` 4 with AVX2, ``_ZGVbN2vv_pow`` 2 with SSE2, the x86-64
vector function ABI), the same library GCC vectorizes ``pow`` loops with, and libm's scalar
``pow`` for the remainder. libmvec is accurate to 4 ulp by contract, and
`tests/replay/kernels/test_vector_power.py` holds it to the contract at every width the compiled
code can take. IEEE special values (0, inf, NaN, exponent 0) are as libm's.

Which width: the widest that both this CPU and the code numba compiles can take
(`widths_to_try`): the CPU's flags from llvmlite's public `get_host_cpu_features`; the compiled
code's from numba's documented settings ``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES`` and
``NUMBA_ENABLE_AVX`` (a vector argument is passed in the registers of the compiled code's target:
AVX-512's 8 doubles in one zmm register only where the target has AVX-512; elsewhere the vector
pow reads garbage). `compiled` then runs each candidate on known values against libm's pow and
keeps the first that agrees. Without libmvec (not glibc on x86-64) `power` is libm's scalar pow,
the plain twin (`plain.power`).
"""

from __future__ import annotations

import ctypes.util
import os
import platform
from collections.abc import Mapping

from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = [
    "host_features",
    "load_libmvec",
    "make_power",
    "target_features",
    "vector_width",
    "widths_to_try",
]


def vector_width(features: str, library_found: bool, machine: str) -> int:
    """Doubles per libmvec call for target `features` ("+avx2,+avx512f,..."): 8 with
    AVX-512F, 4 with AVX2, 2 on any other x86-64; 1 (scalar libm only) without libmvec."""
    if not library_found or machine not in ("x86_64", "AMD64"):
        return 1
    enabled = {flag[1:] for flag in features.split(",") if flag.startswith("+")}
    if "avx512f" in enabled:
        return 8
    return 4 if "avx2" in enabled else 2


def host_features() -> str:
    """This CPU's features as LLVM names them ("+avx2,-avx512f,..."): llvmlite's public call."""
    return llvm_binding.get_host_cpu_features().flatten()


AVX_OFF_BY_DEFAULT = frozenset({"sandybridge", "ivybridge", "corei7-avx", "core-avx-i", "nocona"})
"""CPUs numba compiles for without AVX unless ``NUMBA_ENABLE_AVX`` says otherwise (numba's docs:
Sandy Bridge and Ivy Bridge, where AVX can be slower; and a baseline name virtual machines
report with AVX they may not have)."""


def target_features(environ: Mapping[str, str], host: str, host_name: str | None = None) -> str:
    """The features of the code numba compiles, from its documented settings: those of
    ``NUMBA_CPU_FEATURES`` where set (and this CPU has them); else none beyond the baseline
    where ``NUMBA_CPU_NAME`` names a CPU (``generic``, or another one, whose features are not
    known here); else this CPU's (`host`), without its AVX ones where ``NUMBA_ENABLE_AVX`` is 0
    or, unset, where this CPU (`host_name`, llvmlite's name for it) is one numba leaves AVX off
    for. (A setting in a ``.numba_config.yaml`` is not read here: the check of each width in
    `compiled` still refuses a width the compiled code cannot take.)"""
    given = environ.get("NUMBA_CPU_FEATURES")
    name = environ.get("NUMBA_CPU_NAME", "host")
    if given is None:
        if name != "host":
            return ""
        if host_name is None:
            host_name = llvm_binding.get_host_cpu_name()
        switch = environ.get("NUMBA_ENABLE_AVX", "").strip()
        avx = host_name not in AVX_OFF_BY_DEFAULT if not switch else switch not in ("0", "")
        if not avx:
            return ",".join(flag for flag in host.split(",") if not flag.startswith("+avx"))
        return host
    on_host = {flag for flag in host.split(",") if flag.startswith("+")}
    return ",".join(flag for flag in given.split(",") if flag in on_host)


def load_libmvec() -> bool:
    """Load glibc's libmvec into the JIT's symbol table; False where there is none."""
    path = ctypes.util.find_library("mvec")
    if path is None:
        return False
    try:
        llvm_binding.load_library_permanently(path)
    except RuntimeError:
        return False
    return True


def widths_to_try(environ: Mapping[str, str] | None = None) -> list[int]:
    """The libmvec widths worth a check, widest first (empty: libm's scalar pow only): those up
    to `vector_width` of the compiled code's features (`target_features`)."""
    environ = os.environ if environ is None else environ
    features = target_features(environ, host_features())
    widest = vector_width(features, load_libmvec(), platform.machine())
    return [width for width in (8, 4, 2) if width <= widest]


# The x86-64 vector function ABI's names: b = SSE, d = AVX2, e = AVX-512; N = unmasked; vv = two
# vector arguments.
_LIBMVEC_POW = {2: "_ZGVbN2vv_pow", 4: "_ZGVdN4vv_pow", 8: "_ZGVeN8vv_pow"}


def power_codegen(width: int):  # noqa: ANN201 (numba's codegen callback)
    """The code of out[k] = values[k] ** exponent, `width` elements per libmvec call (1: libm's
    scalar pow for all): full vectors first, then the remainder one by one."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        values_type, _, out_type = signature.args
        values = context.make_array(values_type)(context, builder, args[0])
        out = context.make_array(out_type)(context, builder, args[2])
        exponent = args[1]
        length = builder.extract_value(values.shape, 0)
        double = ir.DoubleType()
        index = length.type
        vectorized = index(0)
        if width > 1:
            vector = ir.VectorType(double, width)
            pow_vector = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(vector, [vector, vector]), _LIBMVEC_POW[width]
            )
            exponents = ir.Constant(vector, ir.Undefined)
            for lane in range(width):
                exponents = builder.insert_element(exponents, exponent, ir.IntType(32)(lane))
            vectorized = builder.mul(builder.udiv(length, index(width)), index(width))
            with cgutils.for_range_slice(builder, index(0), vectorized, index(width)) as (k, _):
                source = builder.bitcast(builder.gep(values.data, [k]), vector.as_pointer())
                target = builder.bitcast(builder.gep(out.data, [k]), vector.as_pointer())
                result = builder.call(pow_vector, [builder.load(source, align=8), exponents])
                builder.store(result, target, align=8)
        pow_scalar = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(double, [double, double]), "llvm.pow.f64"
        )
        with cgutils.for_range_slice(builder, vectorized, length, index(1)) as (k, _):
            result = builder.call(
                pow_scalar, [builder.load(builder.gep(values.data, [k])), exponent]
            )
            builder.store(result, builder.gep(out.data, [k]))
        return context.get_dummy_value()

    return codegen


def make_power(width: int):  # noqa: ANN201 (a numba intrinsic)
    """out[k] = values[k] ** exponent for every k, `width` elements per libmvec call (1: libm's
    scalar pow only): C-contiguous float64 vectors of one length (not checked; they may be the
    same array) and a float64 exponent. Only a width `widths_to_try` offers is right, and
    `compiled` checks it before any kernel uses it."""

    def typer(typingctx, values, exponent, out):  # noqa: ANN001, ANN202, ARG001
        vectors = all(
            isinstance(array, types.Array)
            and array.ndim == 1
            and array.dtype == types.float64
            and array.layout == "C"
            for array in (values, out)
        )
        if not (vectors and exponent == types.float64):
            return None
        return types.void(values, exponent, out), power_codegen(width)

    typer.__name__ = f"power_{width}"
    return intrinsic(typer)
