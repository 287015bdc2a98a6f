// A key-value store through which the processes of a job find each other before any communicator
// exists: the shared-memory backend exchanges its segment's name and checks in through one. The
// shape is torch.distributed's Store (set, get, add, wait), so a framework's own store can stand
// behind it; chorus ships a TCP store served by rank 0 (tcp_store.hpp) and a file store in a directory
// (file_store.hpp), and store_from_environment() (store_address.hpp) picks one from the launcher's
// variables.
//
// Every call that waits is bounded by the store's timeout and throws chorus::Error(timeout) naming the
// call and the keys it waited for; a store that cannot be reached or is malformed throws at once.
// Values are bytes (std::string holds any byte, '\0' included). A store may be used by one thread at
// a time; each process holds its own.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace bootstrap {

namespace detail {

// A key or value as error messages print it: both are bytes, and a '\0' or a newline must not cut the message.
inline std::string printable_bytes(const std::string& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\' && c != '\'') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out + "'";
}

// "'a', 'b'"
inline std::string printable_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& key : keys) out += (out.empty() ? "" : ", ") + printable_bytes(key);
  return out;
}

// add()'s counter is kept as decimal text, as torch's stores keep it, so get() of a counter reads "3"; an absent
// (or empty) value counts from 0.
// False where the text is not such a number (a key set() to something else) or the sum would overflow.
inline bool add_to_counter(const std::string& text, std::int64_t delta, std::int64_t& sum) {
  std::int64_t value = 0;
  if (!text.empty()) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return false;
  }
  if ((delta > 0 && value > std::numeric_limits<std::int64_t>::max() - delta) ||
      (delta < 0 && value < std::numeric_limits<std::int64_t>::min() - delta)) {
    return false;
  }
  sum = value + delta;
  return true;
}

}  // namespace detail

class Store {
 public:
  virtual ~Store() = default;

  // Sets `key` to `value`, replacing any value it had.
  virtual void set(const std::string& key, const std::string& value) = 0;
  // The value of `key`, waiting (bounded) until some process has set it.
  virtual std::string get(const std::string& key) = 0;
  // Adds `delta` to the integer stored at `key` (absent: 0) and returns the new value; atomic across
  // processes, so it counts arrivals.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  // Returns once every key is set; bounded.
  virtual void wait(const std::vector<std::string>& keys) = 0;
  // Whether every key is set now; never waits.
  virtual bool check(const std::vector<std::string>& keys) = 0;

  virtual std::chrono::milliseconds timeout() const = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::bootstrap
