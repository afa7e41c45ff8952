"""Three intrinsics for numba kernels that numba has no public call for: a prefetch hint (LLVM's
``llvm.prefetch`` on one array element, so that the loads of later work overlap the work at
hand), an overlapping move within one array (``llvm.memmove``) and a float64's bits."""

from __future__ import annotations

from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["float_bits", "move", "prefetch"]


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

    A rank order's shifts inside a block (at most 64 entries) ran 0.92-0.94x the rank cycle's
    time this way against a compiled loop, whose vector body, remainder and exit branches cost
    more than libc's size classes."""

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
