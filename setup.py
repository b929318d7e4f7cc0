"""Build of numdyn's C extension (numdyn._C) and its Python package.

The C core lives in src/<layer>/ (core, graph, passes, codegen, toolchain,
runtime, trace; module init in src/module.c), numpy_shim/ and guards/;
sources include each other's headers by path from src/ or the repository
root ("graph/graph.h", "guards/guards.h"). The headers that generated code
includes live in kernels/ and ship inside the package as numdyn/kernels.
"""
import glob
import os
from concurrent.futures import ThreadPoolExecutor

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def sources():
    out = []
    for pattern in ("src/*.c", "src/*/*.c", "numpy_shim/*.c", "guards/*.c"):
        out += sorted(glob.glob(pattern))
    return out


cflags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
          "-Wno-unused-parameter", "-Wno-missing-field-initializers",
          "-fvisibility=hidden"]
if os.environ.get("NUMDYN_SANITIZE"):
    # nonnull-attribute: memcpy/memcmp of zero bytes from a 0-d array's NULL
    # dims is UB only on paper (C2y defines it); every other UB check stays
    cflags += ["-O1", "-g", "-fno-omit-frame-pointer",
               "-fsanitize=address,undefined", "-fno-sanitize=nonnull-attribute"]

ext = Extension(
    "numdyn._C",
    sources=sources(),
    include_dirs=[numpy.get_include(), "src", ".", "kernels"],
    # One C-API level whatever NumPy builds it (each NumPy's default
    # differs): the 2.0 API, the oldest NumPy the package runs with.
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"),
                   ("NPY_TARGET_VERSION", "NPY_2_0_API_VERSION")],
    extra_compile_args=cflags,
    extra_link_args=(["-fsanitize=address,undefined"]
                     if os.environ.get("NUMDYN_SANITIZE") else []),
    libraries=["dl"],
    depends=(glob.glob("src/*/*.h") + glob.glob("src/*/*.def") +
             glob.glob("numpy_shim/*.h") + glob.glob("guards/*.h")),
)



class parallel_build_ext(build_ext):
    """Compile the extension's C files on all cores unless told otherwise
    (`build_ext -j N`, or NUMDYN_BUILD_JOBS): it is many small files in one
    extension, and setuptools' own `-j` builds extensions in parallel, not
    the files of one."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            jobs = os.environ.get("NUMDYN_BUILD_JOBS") or os.cpu_count() or 1
            self.parallel = int(jobs)

    def build_extension(self, ext):
        cc = self.compiler
        jobs = int(self.parallel or 1)
        steps = ("_setup_compile", "_get_cc_args", "_compile")
        if jobs <= 1 or not all(hasattr(cc, s) for s in steps):
            return super().build_extension(ext)

        # CCompiler.compile's own steps, the per-file one on `jobs` threads
        # (each runs the compiler as a process)
        def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                    extra_preargs=None, extra_postargs=None, depends=None):
            macros, objects, extra, pp_opts, build = cc._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs)
            cc_args = cc._get_cc_args(pp_opts, debug, extra_preargs)

            def one(obj):
                if obj in build:
                    src, src_ext = build[obj]
                    cc._compile(obj, src, src_ext, cc_args, extra, pp_opts)

            with ThreadPoolExecutor(jobs) as pool:
                list(pool.map(one, objects))
            return objects

        cc.compile = compile
        try:
            return super().build_extension(ext)
        finally:
            del cc.compile


setup(
    cmdclass={"build_ext": parallel_build_ext},
    ext_modules=[ext],
    package_dir={"numdyn": "src/numdyn", "numdyn.kernels": "kernels"},
    packages=["numdyn", "numdyn.kernels"],
    package_data={"numdyn.kernels": ["*.h", "*.c", "*.cuh"]},
)
