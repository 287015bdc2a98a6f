# Builds chorus_torch._C: one translation unit (src/extension.cpp) that includes chorus's headers from
# ../include and torch's from the installed wheel. The C++ standard and flags are torch's own
# (torch.utils.cpp_extension picks -std=c++20 for torch 2.15). With MPI found by pkg-config, the build
# also has the mpi transport (chorus::mpi::Comm, for jobs started by mpirun across machines).
import os
import shlex
import subprocess

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

here = os.path.dirname(os.path.abspath(__file__))
chorus_include = os.path.join(here, "..", "include")
if not os.path.isfile(os.path.join(chorus_include, "chorus", "shm.hpp")):
    raise SystemExit(f"chorus-torch: chorus's headers are not at {chorus_include}: build from a chorus checkout")


def mpi_flags():
    """MPI's compile and link flags from pkg-config (Open MPI, then MPICH), or None. CHORUS_TORCH_MPI=0
    builds without MPI; =1 fails the build when MPI is not found."""
    wanted = os.environ.get("CHORUS_TORCH_MPI", "auto")
    if wanted == "0":
        return None
    for package in ("ompi-c", "mpich"):
        try:
            cflags = subprocess.run(["pkg-config", "--cflags", package], capture_output=True, text=True, check=True).stdout
            libs = subprocess.run(["pkg-config", "--libs", package], capture_output=True, text=True, check=True).stdout
            return shlex.split(cflags), shlex.split(libs)
        except (OSError, subprocess.CalledProcessError):
            continue
    if wanted == "1":
        raise SystemExit("chorus-torch: CHORUS_TORCH_MPI=1 but pkg-config finds neither ompi-c nor mpich")
    return None


mpi = mpi_flags()
compile_args = ["-O2", "-Wall", "-Wextra"] + (["-DCHORUS_TORCH_WITH_MPI=1"] + mpi[0] if mpi else [])
link_args = mpi[1] if mpi else []

setup(
    ext_modules=[
        CppExtension(
            "chorus_torch._C",
            [os.path.join("src", "extension.cpp")],
            include_dirs=[os.path.abspath(chorus_include), os.path.join(here, "src")],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
            libraries=["rt"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
