// broadcast_object and all_gather_object over host threads and the message-queue communicator.
#include <catch2/catch.hpp>

#include <chorus/bootstrap/exchange.hpp>
#include <chorus/host.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "support/mailbox_comm.hpp"

namespace test_exchange {

namespace {
struct UniqueIdShape {  // ncclUniqueId: 128 opaque bytes
  char internal[128];
};
struct IpcHandleShape {  // cudaIpcMemHandle_t: 64 opaque bytes
  unsigned char reserved[64];
};

// Returns "" or what went wrong on this rank.
template <class Comm>
std::string exchange_checks(Comm& comm) {
  UniqueIdShape id{};
  const int root = comm.size() - 1;
  if (comm.rank() == root) std::strcpy(id.internal, "id of the last rank");
  chorus::bootstrap::broadcast_object(comm, id, root);
  if (std::string(id.internal) != "id of the last rank") return "broadcast_object gave '" + std::string(id.internal) + "'";
  IpcHandleShape mine{};
  for (unsigned char& b : mine.reserved) b = static_cast<unsigned char>(comm.rank() * 3 + 1);
  const std::vector<IpcHandleShape> all = chorus::bootstrap::all_gather_object(comm, mine);
  if (all.size() != static_cast<std::size_t>(comm.size())) return "all_gather_object gave the wrong count";
  for (int r = 0; r < comm.size(); ++r) {
    const IpcHandleShape& h = all[static_cast<std::size_t>(r)];
    if (h.reserved[0] != r * 3 + 1 || h.reserved[63] != r * 3 + 1) return "all_gather_object: wrong handle of rank " + std::to_string(r);
  }
  return "";
}
}  // namespace

TEST_CASE("handles travel over any communicator", "[bootstrap]") {
  for (int ranks : {1, 2, 3, 5}) {
    std::vector<std::string> host(static_cast<std::size_t>(ranks)), mail(static_cast<std::size_t>(ranks));
    chorus::host::Team team(ranks);
    team.run([&](chorus::host::Comm& comm) { host[static_cast<std::size_t>(comm.rank())] = exchange_checks(comm); });
    mailbox::run(ranks, [&](mailbox::Comm& comm) { mail[static_cast<std::size_t>(comm.rank())] = exchange_checks(comm); });
    INFO(ranks << " ranks");
    CHECK(host == std::vector<std::string>(static_cast<std::size_t>(ranks)));
    CHECK(mail == std::vector<std::string>(static_cast<std::size_t>(ranks)));
  }
}

}  // namespace test_exchange
