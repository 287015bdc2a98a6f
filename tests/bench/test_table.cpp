// The nccl-tests table: header and rows line up column by column, numbers print as nccl-tests
// prints them, and the footer reports wrong values and the average bus bandwidth.
#include <catch2/catch.hpp>
#include <chorus/bench/table.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace test_table {

using chorus::Collective;
using namespace chorus::bench;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// (end column, token) for every whitespace-separated token.
std::vector<std::pair<std::size_t, std::string>> tokens(const std::string& line) {
  std::vector<std::pair<std::size_t, std::string>> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.emplace_back(i, line.substr(start, i - start));
  }
  return out;
}

Row sample_row() {
  Row row;
  row.bytes = 33554432;
  row.elements = 8388608;
  row.type = "float";
  row.redop = "sum";
  row.root = -1;
  row.out_of_place = make_result(Collective::all_reduce, 4, row.bytes, 0.0123456, std::size_t{0});
  row.in_place = make_result(Collective::all_reduce, 4, row.bytes, 0.000054321, std::size_t{3});
  return row;
}

}  // namespace

TEST_CASE("time prints in 7 characters with nccl-tests' precision steps") {
  CHECK(format_time_us(0.0) == "0.00");
  CHECK(format_time_us(12.346e-6) == "12.35");
  CHECK(format_time_us(99.994e-6) == "99.99");
  CHECK(format_time_us(123.46e-6) == "123.5");
  CHECK(format_time_us(9999.9e-6) == "9999.9");
  CHECK(format_time_us(0.0123456) == "12346");
  CHECK(format_time_us(1.5) == "1500000");
}

TEST_CASE("header has three '#' lines naming nccl-tests' columns") {
  const auto lines = lines_of(table_header());
  REQUIRE(lines.size() == 3);
  for (const auto& line : lines) {
    CHECK(line.front() == '#');
    CHECK(line.back() != ' ');
  }
  std::vector<std::string> names;
  for (const auto& [end, token] : tokens(lines[1])) names.push_back(token);
  CHECK(names == std::vector<std::string>{"#", "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                                          "#wrong", "time", "algbw", "busbw", "#wrong"});
  CHECK(lines[0].find("out-of-place") < lines[0].find("in-place"));
}

TEST_CASE("a row's values end under their column names") {
  const auto header = lines_of(table_header());
  const std::string row = format_row(sample_row());
  REQUIRE(row.back() == '\n');
  const auto values = tokens(row.substr(0, row.size() - 1));
  auto names = tokens(header[1]);
  names.erase(names.begin());  // the lone '#'
  REQUIRE(values.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO("column " << names[i].second << " value " << values[i].second);
    CHECK(values[i].first == names[i].first);
  }
  // Units sit under size, count and the time/bandwidth columns.
  const auto units = tokens(header[2]);
  const std::vector<std::size_t> unit_columns = {0, 1, 5, 6, 7, 9, 10, 11};
  REQUIRE(units.size() == unit_columns.size() + 1);
  for (std::size_t i = 0; i < unit_columns.size(); ++i) CHECK(units[i + 1].first == names[unit_columns[i]].first);
  // "out-of-place" is centred over the first half, "in-place" over the second.
  const std::size_t oop = header[0].find("out-of-place");
  const std::size_t ip = header[0].find("in-place");
  CHECK(oop > names[4].first);
  CHECK(oop + 12 <= names[8].first);
  CHECK(ip > names[8].first);
}

TEST_CASE("row values are formatted as nccl-tests formats them") {
  const std::string row = format_row(sample_row());
  const auto values = tokens(row.substr(0, row.size() - 1));
  std::vector<std::string> text;
  for (const auto& [end, token] : values) text.push_back(token);
  // 32 MiB in 12.3456 ms: algbw 2.72 GB/s, busbw 1.5x that on 4 ranks.
  CHECK(text == std::vector<std::string>{"33554432", "8388608", "float", "sum", "-1", "12346", "2.72", "4.08", "0",
                                         "54.32", "617.71", "926.56", "3"});
}

TEST_CASE("an unchecked result shows N/A in #wrong") {
  Row row = sample_row();
  row.out_of_place.wrong.reset();
  row.in_place.wrong.reset();
  const std::string line = format_row(row);
  CHECK(line.find("N/A") != std::string::npos);
  CHECK(line.find("N/A", line.find("N/A") + 1) != std::string::npos);
}

TEST_CASE("footer: OK with no wrong values, FAILED otherwise, and the mean busbw") {
  CHECK(table_footer(0, 12.5) == "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5\n#\n");
  CHECK(table_footer(7, 0.0) == "# Out of bounds values : 7 FAILED\n# Avg bus bandwidth    : 0\n#\n");
  CHECK(table_footer({}) == "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0\n#\n");
}

TEST_CASE("average busbw covers both placements of every row; wrong values add up") {
  Row a = sample_row();
  a.out_of_place.busbw = 1.0;
  a.in_place.busbw = 2.0;
  Row b = sample_row();
  b.out_of_place.busbw = 3.0;
  b.in_place.busbw = 6.0;
  b.out_of_place.wrong = 5;
  b.in_place.wrong.reset();
  CHECK(average_busbw({a, b}) == 3.0);
  CHECK(total_wrong({a, b}) == 3 + 5);
  CHECK(table_footer({a, b}) == "# Out of bounds values : 8 FAILED\n# Avg bus bandwidth    : 3\n#\n");
}

TEST_CASE("make_result derives both bandwidths from the time") {
  const Result r = make_result(Collective::all_gather, 4, 4000000000u, 2.0, std::nullopt);
  CHECK(r.seconds == 2.0);
  CHECK(r.algbw == Approx(2.0));
  CHECK(r.busbw == Approx(1.5));
  CHECK_FALSE(r.wrong.has_value());
}

}  // namespace test_table
