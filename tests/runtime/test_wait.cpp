// wait_until: returns once ready, lets poll() end the wait early, and calls on_timeout after
// roughly the timeout (not before, and not much later even once it sleeps).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <chorus/runtime/wait.hpp>

namespace test_wait {

using chorus::runtime::wait_until;
using Clock = std::chrono::steady_clock;

TEST_CASE("wait_until returns as soon as ready", "[wait]") {
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    flag.store(true);
  });
  int polls = 0;
  bool timed_out = false;
  wait_until(
      10000, 2, [&] { return flag.load(); }, [&] { ++polls; }, [&]() -> long { timed_out = true; throw std::runtime_error("t"); });
  setter.join();
  CHECK(flag.load());
  CHECK(polls > 0);
  CHECK_FALSE(timed_out);
  // Already ready: no poll at all.
  polls = 0;
  wait_until(10000, 2, [] { return true; }, [&] { ++polls; }, []() -> long { throw std::runtime_error("t"); });
  CHECK(polls == 0);
}

TEST_CASE("wait_until times out after the deadline", "[wait]") {
  const auto start = Clock::now();
  CHECK_THROWS_WITH(wait_until(
                        100, 2, [] { return false; }, [] {}, []() -> long { throw std::runtime_error("timed out"); }),
                    "timed out");
  const auto elapsed = Clock::now() - start;
  CHECK(elapsed >= std::chrono::milliseconds(100));
  CHECK(elapsed < std::chrono::milliseconds(2000));
}

TEST_CASE("on_timeout may extend the wait once", "[wait]") {
  const auto start = Clock::now();
  int timeouts = 0;
  CHECK_THROWS_WITH(wait_until(
                        100, 2, [] { return false; }, [] {},
                        [&]() -> long {
                          if (++timeouts == 1) return 150;
                          throw std::runtime_error("timed out");
                        }),
                    "timed out");
  CHECK(timeouts == 2);
  CHECK(Clock::now() - start >= std::chrono::milliseconds(250));
}

TEST_CASE("poll ends a wait early by throwing", "[wait]") {
  int polls = 0;
  CHECK_THROWS_WITH(wait_until(
                        60000, 2, [] { return false; },
                        [&] {
                          if (++polls == 500) throw std::runtime_error("released");
                        },
                        []() -> long { throw std::runtime_error("timed out"); }),
                    "released");
  CHECK(polls == 500);
}

}  // namespace test_wait
