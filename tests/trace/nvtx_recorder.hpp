// What NVTX saw: the ranges pushed and popped in this process, recorded by a tool that attaches to
// NVTX as Nsight Systems does (nvtx_recorder.cpp, linked into a test program that has NVTX ranges).
// The device backends' tests read it to check that each call opened the range it should, by name.
#pragma once

#include <string>
#include <vector>

namespace nvtx_recorder {

// "push NAME" or "pop", in the order they happened (any thread), since the last take(); clears them.
std::vector<std::string> take();

// Whether NVTX called the recorder's initialisation (it does on the first NVTX call of the process).
bool attached();

}  // namespace nvtx_recorder
