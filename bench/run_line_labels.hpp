// chorus-run --label: one child's output stream cut into lines, each written out with the rank's prefix.
// A line is written with a single write() once it is complete, so lines from different ranks never mix
// mid-line; a last line without '\n' is written at the end of the stream with '\n' added, so the next
// label starts a line of its own.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

namespace chorus_run {

// Writes all of `text` to `fd`. Errors are dropped: a closed stdout (chorus-run | head) must not end the
// job, only its output.
inline void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

class LineLabeler {
 public:
  LineLabeler(std::string prefix, int out_fd) : prefix_(std::move(prefix)), out_fd_(out_fd) {}

  // A chunk of the child's stream, as read from its pipe.
  void feed(const char* data, std::size_t size) {
    pending_.append(data, size);
    std::string lines;
    std::size_t start = 0;
    for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
      lines += prefix_;
      lines.append(pending_, start, end + 1 - start);
    }
    pending_.erase(0, start);
    // A child that never writes '\n' must not grow the buffer without bound: past this, the text so far
    // is written as a line of its own.
    if (pending_.size() > kMaxLine) {
      lines += prefix_ + pending_ + '\n';
      pending_.clear();
    }
    write_all(out_fd_, lines);
  }

  // The stream ended: its unfinished last line, if any.
  void finish() {
    if (pending_.empty()) return;
    write_all(out_fd_, prefix_ + pending_ + '\n');
    pending_.clear();
  }

 private:
  static constexpr std::size_t kMaxLine = 1 << 16;
  std::string prefix_;
  int out_fd_;
  std::string pending_;
};

}  // namespace chorus_run
