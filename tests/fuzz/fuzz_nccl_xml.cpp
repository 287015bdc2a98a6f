// libFuzzer harness for the NCCL topology XML reader (and the XML tokenizer under it): any input
// either reads or throws chorus::Error; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  chorus::topo::Topology topo;
  try {
    topo = chorus::topo::read_nccl_xml(text);
  } catch (const chorus::Error&) {
    return 0;
  }
  fuzz::exercise(topo);
  return 0;
}
