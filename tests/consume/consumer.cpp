// A downstream program: includes the umbrella and runs one collective. Built by the pkg-config and
// subproject consumer tests to prove the installed/declared dependency is usable as documented.
#include <chorus/chorus.hpp>

#include <cstdio>
#include <vector>

int main() {
  chorus::host::Team team(3);
  std::vector<int> results(3, -1);
  team.run([&](chorus::host::Comm& comm) {
    int value = comm.rank() + 1;
    comm.all_reduce(&value, &value, 1, chorus::ReduceOp::sum);
    results[comm.rank()] = value;
  });
  for (int value : results) {
    if (value != 6) {
      std::printf("consumer: expected 6, got %d\n", value);
      return 1;
    }
  }
#ifdef CHORUS_COMPILED_LIB
  std::printf("consumer (compiled mode, libchorus): ok\n");
#else
  std::printf("consumer (header-only): ok\n");
#endif
  return 0;
}
