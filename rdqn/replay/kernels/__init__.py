"""The replay kernels' compile policy, their fast building blocks with their plain twins, and the
registry of every kernel module.

    compiled.py       how a kernel is compiled (`kernel`, `inlined`, `refcounted`) and which
                      building block it calls: each fast path checked at import against its
                      plain twin, ``RDQN_PLAIN_KERNELS`` to take the twins
    intrinsics.py     the fast building blocks in LLVM IR: a prefetch, memmove, masked stores,
                      the popcount select, a bit cast
    vector_power.py   x ** a over an array by glibc's libmvec, and which width this CPU takes
    plain.py          the plain-numba twin of each (the same results)
    registry.py       every module that holds cached kernels, by name, and what the warm-up asks
                      of them: where numba keeps them, whether it holds them all

Importing this package loads nothing: `registry` is plain Python, and `compiled` loads numba
(and checks the fast paths) only when a kernel module imports it.
"""
