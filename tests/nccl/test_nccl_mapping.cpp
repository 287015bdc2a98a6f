// What chorus says about NCCL: its return codes as chorus::Error (code, message with NCCL's own words,
// the call, the rank), and chorus's types and ops as NCCL's, with `unsupported` where the loaded
// library is too old. NCCL's pure functions (ncclGetErrorString, ncclGetVersion) run here without a GPU.
#include <catch2/catch.hpp>

#include <chorus/nccl/check.hpp>
#include <chorus/nccl/data_types.hpp>
#include <chorus/nccl/library.hpp>

#include <string>

using chorus::DataType;
using chorus::ErrorCode;
using chorus::ReduceOp;
namespace nccl = chorus::nccl;

TEST_CASE("every ncclResult_t maps to a chorus error code", "[nccl]") {
  CHECK(nccl::error_code_of(ncclInvalidArgument) == ErrorCode::invalid_argument);
  CHECK(nccl::error_code_of(ncclInvalidUsage) == ErrorCode::invalid_argument);
  CHECK(nccl::error_code_of(ncclRemoteError) == ErrorCode::peer_failed);
  CHECK(nccl::error_code_of(ncclUnhandledCudaError) == ErrorCode::internal);
  CHECK(nccl::error_code_of(ncclSystemError) == ErrorCode::internal);
  CHECK(nccl::error_code_of(ncclInternalError) == ErrorCode::internal);
  for (int r = 0; r < ncclNumResults; ++r) {
    CHECK(std::string(nccl::result_name(static_cast<ncclResult_t>(r))).rfind("nccl", 0) == 0);
  }
  CHECK(std::string(nccl::result_name(ncclRemoteError)) == "ncclRemoteError");
  CHECK(std::string(nccl::result_name(static_cast<ncclResult_t>(99))) == "unknown ncclResult_t");
}

TEST_CASE("an NCCL error names the call, the rank, the function and NCCL's words", "[nccl]") {
  const chorus::Error e = nccl::nccl_error(ncclInvalidArgument, "all_reduce", chorus::RankName(2, 5), "ncclAllReduce",
                                           "Invalid root 7");
  const std::string what = e.what();
  CHECK(e.code() == ErrorCode::invalid_argument);
  CHECK(what.find("chorus::all_reduce on rank 2 (team rank 5)") == 0);
  CHECK(what.find("ncclAllReduce failed: ") != std::string::npos);
  CHECK(what.find(ncclGetErrorString(ncclInvalidArgument)) != std::string::npos);  // the real library's text
  CHECK(what.find("(ncclInvalidArgument)") != std::string::npos);
  CHECK(what.find(": Invalid root 7") != std::string::npos);
  const std::string quiet = nccl::nccl_error(ncclRemoteError, "wait", 0, "ncclCommGetAsyncError", "").what();
  const std::string tail = "(ncclRemoteError)";
  CHECK(quiet.find(tail) + tail.size() == quiet.size());  // no dangling ": " without a last error
}

TEST_CASE("the ten chorus types and five ops are NCCL's", "[nccl]") {
  const int v = NCCL_VERSION_CODE;
  CHECK(nccl::to_nccl(DataType::int8, v, "t", 0) == ncclInt8);
  CHECK(nccl::to_nccl(DataType::uint8, v, "t", 0) == ncclUint8);
  CHECK(nccl::to_nccl(DataType::int32, v, "t", 0) == ncclInt32);
  CHECK(nccl::to_nccl(DataType::uint32, v, "t", 0) == ncclUint32);
  CHECK(nccl::to_nccl(DataType::int64, v, "t", 0) == ncclInt64);
  CHECK(nccl::to_nccl(DataType::uint64, v, "t", 0) == ncclUint64);
  CHECK(nccl::to_nccl(DataType::float16, v, "t", 0) == ncclFloat16);
  CHECK(nccl::to_nccl(DataType::float32, v, "t", 0) == ncclFloat32);
  CHECK(nccl::to_nccl(DataType::float64, v, "t", 0) == ncclFloat64);
  CHECK(nccl::to_nccl(DataType::bfloat16, v, "t", 0) == ncclBfloat16);
  CHECK(nccl::to_nccl(ReduceOp::sum, v, "t", 0) == ncclSum);
  CHECK(nccl::to_nccl(ReduceOp::prod, v, "t", 0) == ncclProd);
  CHECK(nccl::to_nccl(ReduceOp::max, v, "t", 0) == ncclMax);
  CHECK(nccl::to_nccl(ReduceOp::min, v, "t", 0) == ncclMin);
  CHECK(nccl::to_nccl(ReduceOp::avg, v, "t", 0) == ncclAvg);
  CHECK(nccl::element_type_v<__half> == DataType::float16);
  CHECK(nccl::element_type_v<const __nv_bfloat16> == DataType::bfloat16);
  CHECK(nccl::element_type_v<chorus::bfloat16> == DataType::bfloat16);
  CHECK(nccl::element_type_v<std::uint64_t> == DataType::uint64);
}

TEST_CASE("what an old NCCL lacks is unsupported, named with the version", "[nccl]") {
  const int nccl_2_9_9 = 20909;
  try {
    nccl::to_nccl(DataType::bfloat16, nccl_2_9_9, "all_reduce", 3);
    FAIL("bfloat16 on NCCL 2.9 must be refused");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("chorus::all_reduce on rank 3") && Catch::Contains("bfloat16") &&
                             Catch::Contains("NCCL 2.10") && Catch::Contains("is 2.9.9"));
  }
  try {
    nccl::to_nccl(ReduceOp::avg, 2708, "reduce", 0);  // 2.7.8: the old encoding
    FAIL("avg on NCCL 2.7 must be refused");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("reduce op avg") && Catch::Contains("is 2.7.8"));
  }
  CHECK(nccl::to_nccl(DataType::float16, nccl_2_9_9, "t", 0) == ncclFloat16);  // older types still map
  CHECK(nccl::to_nccl(ReduceOp::max, 2708, "t", 0) == ncclMax);
  CHECK(nccl::to_nccl(DataType::bfloat16, 21000, "t", 0) == ncclBfloat16);
  CHECK_THROWS_AS(nccl::to_nccl(static_cast<DataType>(12), NCCL_VERSION_CODE, "t", 0), chorus::Error);
  CHECK_THROWS_AS(nccl::to_nccl(static_cast<ReduceOp>(9), NCCL_VERSION_CODE, "t", 0), chorus::Error);
}

TEST_CASE("version codes read as NCCL prints them", "[nccl]") {
  CHECK(nccl::version_text(22809) == "2.28.9");
  CHECK(nccl::version_text(21003) == "2.10.3");
  CHECK(nccl::version_text(2708) == "2.7.8");
}

TEST_CASE("the real NCCL loads here and is new enough", "[nccl]") {
  int version = 0;
  REQUIRE(nccl::Library::get_version(&version) == ncclSuccess);
  INFO("loaded NCCL " << nccl::version_text(version));
  CHECK(version >= 21800);
  CHECK(nccl::version_text(version) == nccl::version_text(NCCL_VERSION_CODE));  // header and library agree here
}
