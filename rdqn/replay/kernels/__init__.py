"""The replay kernels' compile policy (`compiled`: how a kernel is compiled, and which fast path or
plain twin each building block takes), the fast building blocks (`intrinsics` in LLVM IR,
`vector_power` by libmvec), their plain twins (`plain`), and the registry of every module with
cached kernels (`registry`). Importing the package loads nothing; `registry` loads no numba.
"""
