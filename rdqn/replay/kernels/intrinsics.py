"""The fast building blocks of the kernels, in LLVM IR, for what numba has no public call: a
prefetch hint (LLVM's ``llvm.prefetch`` on one array element, so that the loads of later work
overlap the work at hand), an overlapping move within one array (``llvm.memmove``), the opening
of a gap in a block by masked vector stores (``llvm.masked.store``), where a value falls among
8 counts' running sums (one vector and a popcount) and a float64's bits.

They lean on numba's internals (``numba.core.cgutils``) and LLVM's intrinsic names, so each has
a plain twin in `plain.py`, and `compiled` checks each one at import (compiled and run on a known
input against its twin) before a kernel calls it."""

from __future__ import annotations

from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["float_bits", "move", "open_gap", "prefetch", "prefix_position"]


# The intrinsic's name mangles its pointer type: `ptr` (p0) from LLVM 16 on, where pointers are
# opaque; i8* (p0i8) before.
_PREFETCH = "llvm.prefetch.p0" if llvm_binding.llvm_version_info[0] >= 16 else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, array, index):  # noqa: ANN001, ANN202, ARG001 (numba's signature)
    """Hint the CPU to load array[index] into the cache (LLVM's prefetch: read, keep in all
    levels), so the loads of a later write overlap the work of this one."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = builder.bitcast(
            cgutils.get_item_pointer(context, builder, array_type, view, [args[1]], False),
            ir.IntType(8).as_pointer(),
        )
        i32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32]),
            _PREFETCH,
        )
        builder.call(function, [pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@intrinsic
def move(typingctx, array, dst, src, count):  # noqa: ANN001, ANN202, ARG001 (numba's signature)
    """array[dst : dst + count] = array[src : src + count] for ranges that may overlap: LLVM's
    memmove (libc's, for a length known only at run time). The caller keeps both ranges in
    the array and count >= 0: nothing is checked.

    For the rank order's shifts inside a block (at most 64 entries): libc's size classes branch
    less than a compiled loop's vector body, remainder and exit."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        to = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]], False)
        start = cgutils.get_item_pointer(context, builder, array_type, view, [args[2]], False)
        itemsize = context.get_abi_sizeof(context.get_data_type(array_type.dtype))
        cgutils.raw_memmove(builder, to, start, args[3], itemsize)
        return context.get_dummy_value()

    return types.void(array, dst, src, count), codegen


@intrinsic
def float_bits(typingctx, value):  # noqa: ANN001, ANN202, ARG001 (numba's signature)
    """The IEEE 754 bits of a float64 as a uint64 (a bit cast, no conversion). For values >= +0.0
    the bits order as the numbers do, so any number of their high bits is a monotone key."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


_LANES = 8  # entries per vector of `open_gap` and `prefix_position`


@intrinsic
def open_gap(typingctx, array, base, at, width):  # noqa: ANN001, ANN202, ARG001 (numba's signature)
    """array[base + k + 1] = array[base + k] for at <= k < width - 1: the block of `width`
    entries at flat offset `base` opens a gap at `at`, its last entry dropping off; `width` a
    multiple of 8 that keeps the block inside the array.

    Eight entries at a time, from the block's end back to its start: each vector is loaded, then
    stored one entry further on under a mask of the entries that move (a vector's store never
    reaches the entries the next one loads), so the trip count is the block's width and no
    branch depends on how far the entries move (libc's `memmove`, `move`, branches on the
    length)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        start = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]], False)
        element = context.get_data_type(array_type.dtype)
        vector = ir.VectorType(element, _LANES)
        i64 = ir.IntType(64)
        at, width = (builder.sext(a, i64) if a.type.width < 64 else a for a in args[2:4])
        store = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(
                ir.VoidType(),
                [vector, start.type, ir.IntType(32), ir.VectorType(ir.IntType(1), _LANES)],
            ),
            f"llvm.masked.store.v{_LANES}{_type_name(element)}.p0",
        )
        lanes = ir.Constant(ir.VectorType(i64, _LANES), list(range(_LANES)))
        size = context.get_abi_sizeof(element)
        vectors = builder.udiv(width, i64(_LANES))
        with cgutils.for_range(builder, vectors) as loop:
            first = builder.mul(builder.sub(builder.sub(vectors, i64(1)), loop.index), i64(_LANES))
            source = builder.gep(start, [first])
            values = builder.load(builder.bitcast(source, vector.as_pointer()), align=size)
            index = builder.add(lanes, _splat(builder, first))
            moves = builder.and_(
                builder.icmp_signed(">=", index, _splat(builder, at)),
                builder.icmp_signed("<", index, _splat(builder, builder.sub(width, i64(1)))),
            )
            destination = builder.gep(source, [i64(1)])
            builder.call(store, [values, destination, ir.IntType(32)(size), moves])
        return context.get_dummy_value()

    return types.void(array, base, at, width), codegen


def _type_name(element: ir.Type) -> str:
    """An element type's name in an LLVM intrinsic's mangled name: i64, i32, f64, f32."""
    return {"double": "f64", "float": "f32"}.get(str(element), str(element))


def _splat(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """A vector of `_LANES` copies of a scalar."""
    vector_type = ir.VectorType(value.type, _LANES)
    one = builder.insert_element(ir.Constant(vector_type, None), value, ir.IntType(32)(0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), [0] * _LANES)
    return builder.shuffle_vector(one, one, zeros)


@intrinsic
def prefix_position(typingctx, counts, start, value):  # noqa: ANN001, ANN202, ARG001
    """For the 8 int32 counts[start : start + 8] and their running sums S_0 <= ... <= S_7: the
    number of the S_j that are <= value, and the last of them (0 if none), as (int64, int64).
    With S_7 > value, that is where the value falls: the first count whose running sum passes
    it, and the sum before it.

    One 8-lane vector: the running sums by three shifted adds, a compare, a popcount, one lane
    extracted, in place of eight dependent scalar adds and compares (the select's step through
    a group's positions)."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        first = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]], False)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        vector_type = ir.VectorType(i32, _LANES)
        sums = builder.load(builder.bitcast(first, vector_type.as_pointer()), align=4)
        zeros = ir.Constant(vector_type, [0] * _LANES)
        for shift in (1, 2, 4):  # lane j gets lanes j - shift .. j added (zeros shifted in)
            lanes = [_LANES] * shift + list(range(_LANES - shift))
            shifted = builder.shuffle_vector(sums, zeros, ir.Constant(vector_type, lanes))
            sums = builder.add(sums, shifted)
        value = builder.trunc(args[2], i32) if args[2].type.width > 32 else args[2]
        behind = builder.icmp_signed("<=", sums, _splat(builder, value))
        popcount = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(8), [ir.IntType(8)]), "llvm.ctpop.i8"
        )
        passed = builder.call(popcount, [builder.bitcast(behind, ir.IntType(8))])
        # Lane `passed` of (0, S_0, ..., S_6) is the sum before the count that passes the value.
        before = builder.shuffle_vector(
            zeros, sums, ir.Constant(vector_type, [0] + list(range(_LANES, 2 * _LANES - 1)))
        )
        everything = builder.icmp_unsigned("==", passed, ir.IntType(8)(_LANES))
        lane = builder.select(everything, i32(0), builder.zext(passed, i32))
        last = builder.select(
            everything,
            builder.extract_element(sums, i32(_LANES - 1)),
            builder.extract_element(before, lane),
        )
        result = [builder.zext(passed, i64), builder.sext(last, i64)]
        return context.make_tuple(builder, signature.return_type, result)

    if not (
        isinstance(counts, types.Array)
        and counts.dtype == types.int32
        and isinstance(value, types.Integer)
        and value.bitwidth >= 32
    ):
        return None  # numba then refuses the call with a typing error
    return types.UniTuple(types.int64, 2)(counts, start, value), codegen
