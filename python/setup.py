# Builds chorus_torch._C: one translation unit (src/extension.cpp) that includes chorus's headers from
# ../include and torch's from the installed wheel. The C++ standard and flags are torch's own
# (torch.utils.cpp_extension picks -std=c++20 for torch 2.15).
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

here = os.path.dirname(os.path.abspath(__file__))
chorus_include = os.path.join(here, "..", "include")
if not os.path.isfile(os.path.join(chorus_include, "chorus", "shm.hpp")):
    raise SystemExit(f"chorus-torch: chorus's headers are not at {chorus_include}: build from a chorus checkout")

setup(
    ext_modules=[
        CppExtension(
            "chorus_torch._C",
            [os.path.join("src", "extension.cpp")],
            include_dirs=[os.path.abspath(chorus_include), os.path.join(here, "src")],
            extra_compile_args=["-O2", "-Wall", "-Wextra"],
            libraries=["rt"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
