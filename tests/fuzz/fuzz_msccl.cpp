// libFuzzer harness for the MSCCL XML importer (algo/msccl.hpp): any input either parses or throws
// chorus::Error; anything else (a crash, a hang, another exception, undefined behaviour) is a finding.
// What parsed must also hold together: every step's thread block and gpu exist, ids are dense.
#include <chorus/algo/msccl.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  chorus::algo::msccl::Program program;
  try {
    program = chorus::algo::parse_msccl(text);
  } catch (const chorus::Error&) {
    return 0;
  }
  if (program.gpus.size() != static_cast<std::size_t>(program.ngpus)) {
    std::fprintf(stderr, "property violated: %zu gpus for ngpus %d\n", program.gpus.size(), program.ngpus);
    std::abort();
  }
  return 0;
}
