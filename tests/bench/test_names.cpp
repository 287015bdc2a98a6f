// Names accepted by -d, -o, --algo and --collective.
#include <catch2/catch.hpp>
#include <chorus/bench/names.hpp>

#include <string>

namespace test_names {

using chorus::Algorithm;
using chorus::DataType;
using chorus::ReduceOp;
using chorus::Collective;
using namespace chorus::bench;

TEST_CASE("data types: nccl-tests names, chorus names and all") {
  CHECK(parse_data_types("float") == std::vector<DataType>{DataType::float32});
  CHECK(parse_data_types("float32") == std::vector<DataType>{DataType::float32});
  CHECK(parse_data_types("half") == std::vector<DataType>{DataType::float16});
  CHECK(parse_data_types("float16") == std::vector<DataType>{DataType::float16});
  CHECK(parse_data_types("double") == std::vector<DataType>{DataType::float64});
  CHECK(parse_data_types("bfloat16") == std::vector<DataType>{DataType::bfloat16});
  CHECK(parse_data_types("int8") == std::vector<DataType>{DataType::int8});
  CHECK(parse_data_types("uint64") == std::vector<DataType>{DataType::uint64});
  const auto all = parse_data_types("all");
  REQUIRE(all.size() == 10);
  for (int t = 0; t < 10; ++t) CHECK(all[t] == static_cast<DataType>(t));
  CHECK(std::string(nccl_name(DataType::float16)) == "half");
  CHECK(std::string(nccl_name(DataType::float32)) == "float");
  CHECK(std::string(nccl_name(DataType::float64)) == "double");
  CHECK(std::string(nccl_name(DataType::bfloat16)) == "bfloat16");
  CHECK(std::string(nccl_name(DataType::uint32)) == "uint32");
}

TEST_CASE("reduction ops and all") {
  CHECK(parse_reduce_ops("sum") == std::vector<ReduceOp>{ReduceOp::sum});
  CHECK(parse_reduce_ops("avg") == std::vector<ReduceOp>{ReduceOp::avg});
  CHECK(parse_reduce_ops("all") ==
        std::vector<ReduceOp>{ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg});
}

TEST_CASE("algorithms and collectives, with or without separators") {
  CHECK(parse_algorithm("ring") == Algorithm::ring);
  CHECK(parse_algorithm("automatic") == Algorithm::automatic);
  CHECK(parse_algorithm("halving_doubling") == Algorithm::halving_doubling);
  CHECK(parse_algorithm("halving-doubling") == Algorithm::halving_doubling);
  CHECK(parse_algorithm("one_shot") == Algorithm::one_shot);
  CHECK(parse_algorithm("TwoShot") == Algorithm::two_shot);
  CHECK(parse_algorithm("tree") == Algorithm::tree);
  CHECK(parse_algorithm("chain") == Algorithm::chain);
  CHECK(parse_algorithm("Pairwise") == Algorithm::pairwise);
  CHECK(parse_collective("all_reduce") == Collective::all_reduce);
  CHECK(parse_collective("allreduce") == Collective::all_reduce);
  CHECK(parse_collective("alltoall") == Collective::all_to_all);
  CHECK(parse_collective("reduce-scatter") == Collective::reduce_scatter);
  CHECK(parse_collective("broadcast") == Collective::broadcast);
  CHECK(parse_collective("reduce") == Collective::reduce);
  CHECK(parse_collective("all_gather") == Collective::all_gather);
}

TEST_CASE("unknown names throw chorus::Error listing the choices") {
  const auto message = [](auto parse, const char* text) -> std::string {
    try {
      parse(text);
    } catch (const chorus::Error& e) {
      CHECK(e.code() == chorus::ErrorCode::invalid_argument);
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(message(parse_data_types, "float8"), Catch::Contains("\"float8\"") && Catch::Contains("bfloat16"));
  CHECK_THAT(message(parse_data_types, ""), Catch::Contains("data type"));
  CHECK_THAT(message(parse_data_types, "Float"), Catch::Contains("data type"));
  CHECK_THAT(message(parse_reduce_ops, "mulsum"), Catch::Contains("prod"));
  CHECK_THAT(message(parse_algorithm, "nvls"), Catch::Contains("halving_doubling"));
  CHECK_THAT(message(parse_collective, "gather"), Catch::Contains("all_to_all"));
  CHECK_THAT(message(parse_collective, ""), Catch::Contains("collective"));
}

}  // namespace test_names
